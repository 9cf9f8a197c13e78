// The Kubernetes API server, built from the pinned k8s.io/kubernetes module
// so the end-to-end tests run rsync against the real thing.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"

	"wasmco.dev/tests/kube/internal/parent"
)

func main() {
	parent.ExitWithStdin()
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
