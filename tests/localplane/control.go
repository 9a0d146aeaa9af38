package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"
)

// serveControl exposes the fault controls on loopback, plain HTTP:
//
//	POST /apiserver/restart?down=SECONDS  stop the apiserver, wait, start it, wait for /readyz
//	POST /apiserver/stop, /apiserver/start
//	POST /etcd/compact                    compact etcd to its current revision
//	POST /proxy/cut                       close every client connection of the proxy
//	POST /proxy/blackhole?seconds=N       hold all proxied traffic (0 = until /proxy/normal)
//	POST /proxy/delay?ms=N                delay every proxied request
//	POST /proxy/throttle?seconds=N        answer 429 to every proxied request for N seconds
//	POST /proxy/normal                    end every proxy fault
//	GET  /proxy/stats
func (pl *plane) serveControl() (string, error) {
	mux := http.NewServeMux()
	seconds := func(r *http.Request, key string) time.Duration {
		v, _ := strconv.ParseFloat(r.URL.Query().Get(key), 64)
		return time.Duration(v * float64(time.Second))
	}
	reply := func(w http.ResponseWriter, v any, err error) {
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			v = map[string]string{"error": err.Error()}
		}
		_ = json.NewEncoder(w).Encode(v)
	}
	ok := map[string]bool{"ok": true}
	mux.HandleFunc("POST /apiserver/restart", func(w http.ResponseWriter, r *http.Request) {
		began := time.Now()
		err := pl.restartAPIServer(seconds(r, "down"))
		reply(w, map[string]any{"ok": err == nil, "seconds": time.Since(began).Seconds()}, err)
	})
	mux.HandleFunc("POST /apiserver/stop", func(w http.ResponseWriter, r *http.Request) {
		pl.apiserver.stop(2 * time.Second)
		reply(w, ok, nil)
	})
	mux.HandleFunc("POST /apiserver/start", func(w http.ResponseWriter, r *http.Request) {
		reply(w, ok, pl.startAPIServer())
	})
	mux.HandleFunc("POST /etcd/compact", func(w http.ResponseWriter, r *http.Request) {
		rev, err := pl.etcd.compact()
		reply(w, map[string]any{"revision": rev}, err)
	})
	mux.HandleFunc("POST /proxy/cut", func(w http.ResponseWriter, r *http.Request) {
		reply(w, map[string]any{"closed": pl.proxy.cut()}, nil)
	})
	mux.HandleFunc("POST /proxy/blackhole", func(w http.ResponseWriter, r *http.Request) {
		pl.proxy.blackhole(seconds(r, "seconds"))
		reply(w, ok, nil)
	})
	mux.HandleFunc("POST /proxy/delay", func(w http.ResponseWriter, r *http.Request) {
		ms, _ := strconv.Atoi(r.URL.Query().Get("ms"))
		pl.proxy.setDelay(time.Duration(ms) * time.Millisecond)
		reply(w, ok, nil)
	})
	mux.HandleFunc("POST /proxy/throttle", func(w http.ResponseWriter, r *http.Request) {
		pl.proxy.throttle(seconds(r, "seconds"))
		reply(w, ok, nil)
	})
	mux.HandleFunc("POST /proxy/bandwidth", func(w http.ResponseWriter, r *http.Request) {
		bytesPerSecond, _ := strconv.Atoi(r.URL.Query().Get("bytesPerSecond"))
		pl.proxy.limitBandwidth(bytesPerSecond)
		reply(w, ok, nil)
	})
	mux.HandleFunc("POST /proxy/normal", func(w http.ResponseWriter, r *http.Request) {
		pl.proxy.normal()
		reply(w, ok, nil)
	})
	mux.HandleFunc("GET /proxy/stats", func(w http.ResponseWriter, r *http.Request) {
		reply(w, pl.proxy.stats(), nil)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go func() { _ = http.Serve(ln, mux) }()
	return fmt.Sprintf("http://%s", ln.Addr()), nil
}
