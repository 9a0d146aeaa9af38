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
//
// and on the HA plane (--ha, ha.go):
//
//	POST /ha/etcd?apiserver=a|b&link=cut|open  cut an apiserver from etcd (its watch cache freezes), or reconnect it
//	POST /ha/route?to=a|b&existing=keep|hold|close  new connections of the load balancer go to that apiserver;
//	                                      its open ones are kept, held silent or closed
//	POST /ha/release                      close the connections a route left held
//	GET  /ha/stats
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
		pl.apiserver.Stop(2 * time.Second)
		reply(w, ok, nil)
	})
	mux.HandleFunc("POST /apiserver/start", func(w http.ResponseWriter, r *http.Request) {
		reply(w, ok, pl.startAPIServer())
	})
	mux.HandleFunc("POST /etcd/compact", func(w http.ResponseWriter, r *http.Request) {
		rev, err := pl.etcd.Compact()
		reply(w, map[string]any{"revision": rev}, err)
	})
	mux.HandleFunc("POST /proxy/cut", func(w http.ResponseWriter, r *http.Request) {
		reply(w, map[string]any{"closed": pl.proxy.Cut()}, nil)
	})
	mux.HandleFunc("POST /proxy/blackhole", func(w http.ResponseWriter, r *http.Request) {
		pl.proxy.Blackhole(seconds(r, "seconds"))
		reply(w, ok, nil)
	})
	mux.HandleFunc("POST /proxy/delay", func(w http.ResponseWriter, r *http.Request) {
		ms, _ := strconv.Atoi(r.URL.Query().Get("ms"))
		pl.proxy.SetDelay(time.Duration(ms) * time.Millisecond)
		reply(w, ok, nil)
	})
	mux.HandleFunc("POST /proxy/throttle", func(w http.ResponseWriter, r *http.Request) {
		pl.proxy.Throttle(seconds(r, "seconds"))
		reply(w, ok, nil)
	})
	mux.HandleFunc("POST /proxy/bandwidth", func(w http.ResponseWriter, r *http.Request) {
		bytesPerSecond, _ := strconv.Atoi(r.URL.Query().Get("bytesPerSecond"))
		pl.proxy.LimitBandwidth(bytesPerSecond)
		reply(w, ok, nil)
	})
	mux.HandleFunc("POST /proxy/normal", func(w http.ResponseWriter, r *http.Request) {
		pl.proxy.Normal()
		reply(w, ok, nil)
	})
	mux.HandleFunc("GET /proxy/stats", func(w http.ResponseWriter, r *http.Request) {
		reply(w, pl.proxy.Stats(), nil)
	})
	if pl.ha != nil {
		pl.serveHAControl(mux, reply)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go func() { _ = http.Serve(ln, mux) }()
	return fmt.Sprintf("http://%s", ln.Addr()), nil
}

func (pl *plane) serveHAControl(mux *http.ServeMux, reply func(http.ResponseWriter, any, error)) {
	mux.HandleFunc("POST /ha/etcd", func(w http.ResponseWriter, r *http.Request) {
		link, err := pl.ha.link(r.URL.Query().Get("apiserver"))
		if err != nil {
			reply(w, nil, err)
			return
		}
		switch state := r.URL.Query().Get("link"); state {
		case "cut":
			reply(w, map[string]any{"closed": link.Cut()}, nil)
		case "open":
			link.Restore()
			reply(w, map[string]any{"ok": true}, nil)
		default:
			reply(w, nil, fmt.Errorf("link=cut or link=open, not %q", state))
		}
	})
	mux.HandleFunc("POST /ha/route", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		reply(w, map[string]any{"ok": true}, pl.ha.lb.Route(q.Get("to"), q.Get("existing")))
	})
	mux.HandleFunc("POST /ha/release", func(w http.ResponseWriter, r *http.Request) {
		reply(w, map[string]any{"closed": pl.ha.lb.ReleaseHeld()}, nil)
	})
	mux.HandleFunc("GET /ha/stats", func(w http.ResponseWriter, r *http.Request) {
		reply(w, pl.ha.stats(), nil)
	})
}
