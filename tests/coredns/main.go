// CoreDNS with the plugins the Corefile wasmco deploys uses, for the
// cluster-deployment tests' CoreDNS image (images.sh); built the way
// CoreDNS documents a build with chosen plugins, so it compiles a tenth
// of what its full release does.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

// The plugins in the order CoreDNS's plugin.cfg gives them: a server's
// chain runs in this order, whatever order the Corefile names them in.
var directives = []string{
	"reload", "ready", "health", "prometheus", "errors",
	"loadbalance", "cache", "kubernetes", "loop", "forward",
}

func init() {
	dnsserver.Directives = directives
}

func main() {
	coremain.Run()
}
