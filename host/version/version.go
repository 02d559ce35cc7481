// Package version holds the build's version string, set at link time.
package version

// Version is overridden with -ldflags "-X github.com/metaclaw-go/metaclaw/host/version.Version=…".
var Version = "0.1.0-dev"
