package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the self-signed trust the plane runs on: one CA that signs the
// apiserver's serving certificate and a client certificate, plus the key that
// signs service-account tokens.
type pki struct {
	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey
}

func newKey() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(err)
	return k
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	must(err)
	return n
}

func writePEM(path, kind string, der []byte) {
	must(os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600))
}

func writeKey(path string, key *ecdsa.PrivateKey) {
	der, err := x509.MarshalECPrivateKey(key)
	must(err)
	writePEM(path, "EC PRIVATE KEY", der)
}

// writePKI creates ca.crt, apiserver.{crt,key}, client.{crt,key} (CN = user,
// the restricted identity) and sa.key in dir.
func writePKI(dir, clientUser string) {
	p := &pki{caKey: newKey()}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "spark-k8s-native local plane CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(10 * 365 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &p.caKey.PublicKey, p.caKey)
	must(err)
	p.caCert, err = x509.ParseCertificate(der)
	must(err)
	writePEM(filepath.Join(dir, "ca.crt"), "CERTIFICATE", der)

	p.leaf(filepath.Join(dir, "apiserver"), pkix.Name{CommonName: "kube-apiserver"}, x509.ExtKeyUsageServerAuth,
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc." + clusterDomain},
		// The sealed cluster's node IP and kubernetes Service ClusterIP.
		[]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1"), net.ParseIP(nodeIP), net.ParseIP(kubernetesSvcIP)})
	p.leaf(filepath.Join(dir, "client"), pkix.Name{CommonName: clientUser}, x509.ExtKeyUsageClientAuth, nil, nil)
	writeKey(filepath.Join(dir, "sa.key"), newKey())
}

func (p *pki) leaf(base string, subject pkix.Name, usage x509.ExtKeyUsage, dns []string, ips []net.IP) {
	key := newKey()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(10 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     dns,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
	must(err)
	writePEM(base+".crt", "CERTIFICATE", der)
	writeKey(base+".key", key)
}

// randomToken is a bearer token for the static token file.
func randomToken() string {
	b := make([]byte, 24)
	_, err := rand.Read(b)
	must(err)
	const hex = "0123456789abcdef"
	out := make([]byte, 0, 48)
	for _, c := range b {
		out = append(out, hex[c>>4], hex[c&15])
	}
	return string(out)
}
