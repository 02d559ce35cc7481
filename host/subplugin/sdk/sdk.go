// Package sdk is the half of MetaClaw's sub-plugin contract that both sides
// share: the go-plugin handshake of each kind, the gRPC service descriptions,
// the messages, and the client and server adapters. A plugin written in Go
// imports only this package (and whatever its own work needs) and calls one
// Serve function from main:
//
//	func main() { sdk.ServeEmbedder(myEmbedder{}) }
//
// The host side (discovery, launch, restart, status) lives in the parent
// package host/subplugin.
//
// The services and messages are generated from the .proto files in
// embedderpb/, trainerpb/ and judgepb/ (protoc-gen-go, protoc-gen-go-grpc;
// see generate.go); the output is committed, so building needs no protoc.
// Plugins in other languages generate their own stubs from the same files.
// See docs/subplugins.md.
package sdk

import (
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// CookieKey is the environment variable the host sets when it launches a
// sub-plugin. Its value names the kind (CookieValue), so a plugin of one kind
// launched as another refuses to start instead of answering the wrong calls.
// The cookie is a guard against mistakes, not a security measure: AutoMTLS is.
const CookieKey = "METACLAW_PLUGIN"

// CookieValue is the magic cookie value for a kind, e.g.
// "metaclaw-subplugin-embedder".
func CookieValue(kind string) string { return "metaclaw-subplugin-" + kind }

// Handshake is the go-plugin handshake of a kind at a protocol version.
func Handshake(kind string, version uint) plugin.HandshakeConfig {
	return plugin.HandshakeConfig{ProtocolVersion: version, MagicCookieKey: CookieKey, MagicCookieValue: CookieValue(kind)}
}

// MaxMessageBytes is the largest gRPC message a Go plugin served by this
// package accepts (gRPC's own default is 4 MiB). The host splits big batches
// well below it.
const MaxMessageBytes = 64 << 20

// EnvLogLevel sets the level of a Go plugin's log (trace, debug, info, warn,
// error; default info). Plugin logs go to stderr as JSON lines, which the host
// copies into its own log under the plugin's name.
const EnvLogLevel = "METACLAW_PLUGIN_LOG_LEVEL"

// ServeOptions tunes Serve*; the zero value is what plugins normally want.
type ServeOptions struct {
	// Logger replaces the default JSON logger on stderr.
	Logger hclog.Logger
	// NoParentWatch keeps the plugin running when its parent (the host)
	// disappears. By default the plugin exits within about a second of
	// being orphaned, so a host killed with SIGKILL leaves nothing behind.
	NoParentWatch bool
}

// serve runs go-plugin's server for one kind; it returns only in tests.
func serve(kind string, version uint, p plugin.Plugin, o ServeOptions) {
	logger := o.Logger
	if logger == nil {
		level := hclog.LevelFromString(os.Getenv(EnvLogLevel))
		if level == hclog.NoLevel {
			level = hclog.Info
		}
		logger = hclog.New(&hclog.LoggerOptions{Level: level, Output: os.Stderr, JSONFormat: true})
	}
	if !o.NoParentWatch && os.Getenv(CookieKey) == CookieValue(kind) {
		go watchParent(os.Getppid(), time.Second)
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake(kind, version),
		Plugins:         plugin.PluginSet{kind: p},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return grpc.NewServer(append(opts, grpc.MaxRecvMsgSize(MaxMessageBytes), grpc.MaxSendMsgSize(MaxMessageBytes))...)
		},
		Logger: logger,
	})
}

// watchParent exits the process once its parent changes (the host died and
// the plugin was re-parented), checking every interval.
func watchParent(ppid int, every time.Duration) {
	if ppid <= 1 {
		return
	}
	for {
		time.Sleep(every)
		if os.Getppid() != ppid {
			fmt.Fprintln(os.Stderr, "metaclaw sub-plugin: host process is gone; exiting")
			os.Exit(0)
		}
	}
}
