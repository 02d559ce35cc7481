// Command metaclaw-embedder-ref is MetaClaw's reference embedder sub-plugin:
// the deterministic hashing embedder of host/subplugin/hashembed served over
// go-plugin's gRPC protocol with AutoMTLS. It needs no model and no network.
//
// It is started by the MetaClaw host, not by hand. Install it as
// $METACLAW_HOME/plugins/metaclaw-embedder-ref and set plugins.embedder: ref.
// Flags (set through a wrapper script or the plugin's args):
//
//	-dims N   vector length (default 384)
package main

import (
	"flag"

	"github.com/metaclaw-go/metaclaw/host/subplugin/hashembed"
	"github.com/metaclaw-go/metaclaw/host/subplugin/sdk"
)

// version is set with -ldflags "-X main.version=…".
var version = "dev"

type refEmbedder struct{ *hashembed.Embedder }

func (refEmbedder) Version() string { return version }

func main() {
	dims := flag.Int("dims", hashembed.DefaultDims, "vector length")
	flag.Parse()
	sdk.ServeEmbedder(refEmbedder{hashembed.New(*dims)})
}
