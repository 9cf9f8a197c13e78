// Package parent ends a test's helper process together with the test.
package parent

import (
	"io"
	"os"
)

// ExitWithStdin exits once stdin reaches end of file, when the
// WASMCO_EXIT_WITH_STDIN environment variable is set: a test keeps the
// write end of that pipe, so however the test ends (even killed), the
// process does not outlive it.
func ExitWithStdin() {
	if os.Getenv("WASMCO_EXIT_WITH_STDIN") == "" {
		return
	}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
}
