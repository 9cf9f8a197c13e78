// etcdctl as etcd's release ships it: Eggo's archive carries it beside
// etcd, and a master joining or leaving changes etcd's members with it.
package main

import (
	"go.etcd.io/etcd/etcdctl/v3/ctlv3"
)

func main() {
	ctlv3.MustStart()
}
