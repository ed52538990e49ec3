// pause: the process that holds a pod sandbox's namespaces (the role of registry.k8s.io/pause).
// It sleeps until SIGINT or SIGTERM (exit 0) and reaps any child that is reparented to it, as
// PID 1 of a pod with a shared PID namespace must. Built static (CGO_ENABLED=0) into a
// one-layer image by test/cluster/build.sh.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var status syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
