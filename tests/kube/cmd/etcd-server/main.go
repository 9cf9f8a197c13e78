// etcd as its own release runs it (flags, clustering, TLS), for the etcd
// members the cluster-deployment tests put on their nodes; cmd/etcd is the
// single-member test store instead.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
