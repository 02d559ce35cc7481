// Command metaclaw is the learning layer for personal AI agents: one binary
// with the host (proxy, store, learning core) and its CLI.
package main

import (
	"errors"
	"fmt"
	"os"
	_ "time/tzdata" // scheduler.timezone works on systems without zoneinfo
)

func main() {
	root := newRoot()
	root.SetVersionTemplate("metaclaw {{.Version}}\n") // --version prints what `metaclaw version` prints
	if err := root.Execute(); err != nil {
		var ec exitCode
		if errors.As(err, &ec) {
			os.Exit(int(ec))
		}
		fmt.Fprintln(os.Stderr, "metaclaw:", err)
		os.Exit(1)
	}
}

// exitCode ends the process with a code and no further message.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit %d", int(e)) }
