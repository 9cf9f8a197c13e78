// A single-member etcd for the API server the end-to-end tests start,
// through etcd's embed package: one binary from the module cache, no
// release download.
package main

import (
	"flag"
	"log"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"

	"wasmco.dev/tests/kube/internal/parent"
)

func main() {
	parent.ExitWithStdin()
	dir := flag.String("data-dir", "", "where etcd keeps its data")
	client := flag.String("client-url", "http://127.0.0.1:2379", "loopback URL clients connect to")
	peer := flag.String("peer-url", "http://127.0.0.1:2380", "loopback URL of the (only) peer")
	cert := flag.String("cert-file", "", "serving certificate (PEM) for an https client URL")
	key := flag.String("key-file", "", "its key (PEM)")
	trustedCA := flag.String("trusted-ca-file", "", "CA (PEM) client certificates must chain to")
	flag.Parse()
	if *dir == "" {
		log.Fatal("--data-dir is required")
	}
	clientURL, err := url.Parse(*client)
	if err != nil {
		log.Fatalf("--client-url: %v", err)
	}
	peerURL, err := url.Parse(*peer)
	if err != nil {
		log.Fatalf("--peer-url: %v", err)
	}

	cfg := embed.NewConfig()
	cfg.Dir = *dir
	cfg.LogLevel = "error"
	cfg.ListenClientUrls = []url.URL{*clientURL}
	cfg.AdvertiseClientUrls = []url.URL{*clientURL}
	cfg.ListenPeerUrls = []url.URL{*peerURL}
	cfg.AdvertisePeerUrls = []url.URL{*peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ClientTLSInfo.CertFile = *cert
	cfg.ClientTLSInfo.KeyFile = *key
	if *trustedCA != "" {
		cfg.ClientTLSInfo.TrustedCAFile = *trustedCA
		cfg.ClientTLSInfo.ClientCertAuth = true
	}

	server, err := embed.StartEtcd(cfg)
	if err != nil {
		log.Fatalf("etcd: %v", err)
	}
	defer server.Close()
	select {
	case <-server.Server.ReadyNotify():
		log.Printf("etcd ready on %s", clientURL)
	case <-time.After(60 * time.Second):
		log.Fatal("etcd did not become ready in 60 s")
	}

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	select {
	case err := <-server.Err():
		log.Fatalf("etcd: %v", err)
	case <-stop:
	}
}
