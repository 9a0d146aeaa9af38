package certs

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTheApiserverAndClientCertificatesChainToTheCA(t *testing.T) {
	dir := t.TempDir()
	apiserver := Apiserver{DNSNames: []string{"localhost", "kubernetes.default.svc"},
		IPs: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")}}
	if err := Write(dir, "spark-driver", apiserver); err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil || !roots.AppendCertsFromPEM(caPEM) {
		t.Fatalf("ca.crt: %v", err)
	}
	load := func(base string) *x509.Certificate {
		pair, err := tls.LoadX509KeyPair(filepath.Join(dir, base+".crt"), filepath.Join(dir, base+".key"))
		if err != nil {
			t.Fatalf("%s: %v", base, err)
		}
		cert, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return cert
	}
	server := load("apiserver")
	for _, name := range []string{"kubernetes.default.svc", "10.96.0.1", "127.0.0.1"} {
		if _, err := server.Verify(x509.VerifyOptions{Roots: roots, DNSName: name,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("the apiserver's certificate for %s: %v", name, err)
		}
	}
	if _, err := server.Verify(x509.VerifyOptions{Roots: roots, DNSName: "elsewhere.example"}); err == nil {
		t.Error("the apiserver's certificate is valid for a name it was not given")
	}
	client := load("client")
	if client.Subject.CommonName != "spark-driver" {
		t.Errorf("client CN %q", client.Subject.CommonName)
	}
	if _, err := client.Verify(x509.VerifyOptions{Roots: roots,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the client certificate: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "sa.key")); err != nil {
		t.Errorf("the service-account signing key: %v", err)
	}
}

func TestWriteNamesTheFileItCouldNotWrite(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "absent")
	err := Write(missing, "spark-driver", Apiserver{})
	if err == nil || !strings.Contains(err.Error(), filepath.Join(missing, "ca.crt")) {
		t.Fatalf("want an error naming %s/ca.crt, got %v", missing, err)
	}
}

func TestTokensAreHexAndDiffer(t *testing.T) {
	a, err := RandomToken()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := RandomToken()
	if len(a) != 48 || a == b {
		t.Fatalf("tokens %q and %q", a, b)
	}
}
