package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// clientUsers are the kubeconfig users: name -> group (O=). Every certificate made here
// is X.509 v3 (Go always writes v3), which rustls requires.
var clientUsers = []struct{ name, group string }{
	{"admin", "system:masters"},
	{"viewer", "viewer"},
	{"no-lease", "no-lease"},
	{"no-pods", "no-pods"},
	{"nobody", "nobody"},
	{"lease-get", "lease-get"},
}

// keyPair is a PEM certificate and its PEM (PKCS#8) private key.
type keyPair struct {
	certPEM, keyPEM []byte
	cert            *x509.Certificate
	key             *ecdsa.PrivateKey
}

// pki holds everything the cluster needs; files live in DIR/pki.
type pki struct {
	ca      keyPair
	serving keyPair
	clients map[string]keyPair
	// The aggregation layer's own CA, as kubeadm makes it (front-proxy-ca): kube-apiserver
	// presents frontProxyClient when it proxies a request to an aggregated API server
	// (Kueue's visibility server), which trusts it through --requestheader-client-ca-file.
	frontProxyCA, frontProxyClient keyPair
}

// frontProxyClientName is the front-proxy client's CN, the one --requestheader-allowed-names allows.
const frontProxyClientName = "front-proxy-client"

func newKey() (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func issue(tmpl *x509.Certificate, parent *keyPair) (keyPair, error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return keyPair{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return keyPair{}, err
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(10 * 365 * 24 * time.Hour)
	tmpl.BasicConstraintsValid = true
	parentCert, parentKey := tmpl, key
	if parent != nil {
		parentCert, parentKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parentCert, &key.PublicKey, parentKey)
	if err != nil {
		return keyPair{}, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return keyPair{}, err
	}
	return keyPair{
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  keyPEM,
		cert:    cert,
		key:     key,
	}, nil
}

// makePKI creates the CA, the serving certificate, the client certificates and the
// service-account signing key, and writes them to dir (0700).
func makePKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{clients: map[string]keyPair{}}
	var err error
	p.ca, err = issue(&x509.Certificate{
		Subject:  pkix.Name{CommonName: "testcluster-ca"},
		IsCA:     true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("CA: %w", err)
	}
	p.serving, err = issueServing("kube-apiserver", &p.ca)
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	p.frontProxyCA, err = issue(&x509.Certificate{
		Subject:  pkix.Name{CommonName: "testcluster-front-proxy-ca"},
		IsCA:     true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("front-proxy CA: %w", err)
	}
	p.frontProxyClient, err = issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: frontProxyClientName},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, &p.frontProxyCA)
	if err != nil {
		return nil, fmt.Errorf("front-proxy client certificate: %w", err)
	}
	for _, u := range clientUsers {
		kp, err := issue(&x509.Certificate{
			Subject:     pkix.Name{CommonName: u.name, Organization: []string{u.group}},
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}, &p.ca)
		if err != nil {
			return nil, fmt.Errorf("client certificate %s: %w", u.name, err)
		}
		p.clients[u.name] = kp
	}
	saKey, saPEM, err := newKey()
	if err != nil {
		return nil, fmt.Errorf("service-account key: %w", err)
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("service-account key: %w", err)
	}
	files := map[string][]byte{
		"ca.crt":        p.ca.certPEM,
		"ca.key":        p.ca.keyPEM,
		"apiserver.crt": p.serving.certPEM,
		"apiserver.key": p.serving.keyPEM,
		"sa.key":        saPEM,
		"sa.pub":        pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER}),

		"front-proxy-ca.crt":     p.frontProxyCA.certPEM,
		"front-proxy-client.crt": p.frontProxyClient.certPEM,
		"front-proxy-client.key": p.frontProxyClient.keyPEM,
	}
	for name, kp := range p.clients {
		files[name+".crt"] = kp.certPEM
		files[name+".key"] = kp.keyPEM
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// issueServing issues a server certificate for 127.0.0.1 and localhost, and for the
// further names and addresses given, signed by ca.
func issueServing(name string, ca *keyPair, more ...string) (keyPair, error) {
	ips, dns := []net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost"}
	for _, m := range more {
		if ip := net.ParseIP(m); ip != nil {
			ips = append(ips, ip)
		} else {
			dns = append(dns, m)
		}
	}
	return issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: name},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: ips,
		DNSNames:    dns,
	}, ca)
}

// tlsFiles are the names a serving certificate and its key take in a folder, as
// controller-runtime and the generic apiserver read them.
var tlsFiles = [2]string{"tls.crt", "tls.key"}

// writeTLS writes kp as DIR/tls.crt and DIR/tls.key.
func (kp keyPair) writeTLS(dir string) error {
	for i, data := range [2][]byte{kp.certPEM, kp.keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, tlsFiles[i]), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// copyTLS copies FROM/tls.crt and FROM/tls.key into TO.
func copyTLS(from, to string) error {
	for _, name := range tlsFiles {
		b, err := os.ReadFile(filepath.Join(from, name))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, name), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}
