// Package certs writes the self-signed trust the plane runs on: one CA that
// signs the apiserver's serving certificate and a client certificate, plus the
// key that signs service-account tokens, and the static tokens' values.
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Apiserver names what the apiserver's serving certificate is valid for.
type Apiserver struct {
	DNSNames []string
	IPs      []net.IP
}

// Write creates in dir: ca.crt; apiserver.crt and apiserver.key, valid for
// apiserver; client.crt and client.key with CN clientUser; and sa.key.
func Write(dir, clientUser string, apiserver Apiserver) error {
	tmpl, caKey, err := newCertificate(pkix.Name{CommonName: "spark-k8s-native local plane CA"})
	if err != nil {
		return err
	}
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("create the CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return fmt.Errorf("parse the CA certificate: %w", err)
	}
	if err := writePEM(filepath.Join(dir, "ca.crt"), "CERTIFICATE", der); err != nil {
		return err
	}
	if err := leaf(ca, caKey, filepath.Join(dir, "apiserver"), pkix.Name{CommonName: "kube-apiserver"},
		x509.ExtKeyUsageServerAuth, apiserver.DNSNames, apiserver.IPs); err != nil {
		return err
	}
	if err := leaf(ca, caKey, filepath.Join(dir, "client"), pkix.Name{CommonName: clientUser},
		x509.ExtKeyUsageClientAuth, nil, nil); err != nil {
		return err
	}
	saKey, err := newKey()
	if err != nil {
		return err
	}
	return writeKey(filepath.Join(dir, "sa.key"), saKey)
}

// RandomToken is a bearer token for the static token file: 24 random bytes in hex.
func RandomToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("a random token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

func leaf(ca *x509.Certificate, caKey *ecdsa.PrivateKey, base string, subject pkix.Name, usage x509.ExtKeyUsage,
	dns []string, ips []net.IP) error {
	tmpl, key, err := newCertificate(subject)
	if err != nil {
		return err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{usage}
	tmpl.DNSNames, tmpl.IPAddresses = dns, ips
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("create the certificate of %s: %w", subject.CommonName, err)
	}
	if err := writePEM(base+".crt", "CERTIFICATE", der); err != nil {
		return err
	}
	return writeKey(base+".key", key)
}

// newCertificate is a template for subject, valid from an hour ago for ten
// years, with a random serial number, and the new key it is for.
func newCertificate(subject pkix.Name) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, fmt.Errorf("a certificate serial number: %w", err)
	}
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(10 * 365 * 24 * time.Hour),
	}, key, nil
}

func newKey() (*ecdsa.PrivateKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate a P-256 key: %w", err)
	}
	return k, nil
}

func writePEM(path, kind string, der []byte) error {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("encode the key of %s: %w", path, err)
	}
	return writePEM(path, "EC PRIVATE KEY", der)
}
