// kube-scheduler a minor version after tests/kube's, for the cluster upgrade tests:
// the machines of a cluster made with tests/kube's are moved to it.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand()))
}
