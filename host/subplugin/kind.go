package subplugin

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"sync"

	"github.com/hashicorp/go-plugin"
)

// Kind describes one kind of sub-plugin: how the host launches it and talks
// to it. Embedder is the first; Trainer and Judge are added the same way:
//
//  1. in host/subplugin/sdk: the Go interface, the handshake (sdk.Handshake
//     with the kind name and a protocol version), a hand-written
//     grpc.ServiceDesc with its messages and a .proto file, a go-plugin
//     GRPCPlugin whose GRPCServer registers the service and whose GRPCClient
//     returns a client, and a ServeX function for plugin mains;
//  2. here: a RegisterKind call whose Probe calls the kind's Info method, a
//     host-side wrapper that implements the Go interface on top of
//     Instance.Call (deadlines, crash detection, restarts), built-ins, and an
//     OpenX function for the daemon.
type Kind struct {
	// Name is the kind name, lower case: the plugin-set key, the cookie
	// suffix and the middle of discovered executable names
	// (metaclaw-<kind>-<name>).
	Name string
	// Handshake must equal what plugins of this kind serve.
	Handshake plugin.HandshakeConfig
	// Plugin is the go-plugin Plugin of the kind; it must implement
	// plugin.GRPCPlugin (the host uses its GRPCClient half).
	Plugin plugin.Plugin
	// Probe is called after every launch with the dispensed client. It
	// returns the plugin's identity, or an error that fails the launch.
	Probe func(ctx context.Context, client any) (Identity, error)
}

// Identity is what a plugin says about itself after a launch. A relaunched
// plugin must report the same Name and Detail (the host refuses a binary
// that changed under it, since stored data such as vectors depend on it).
type Identity struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	Detail  string `json:"detail,omitempty"`
}

var (
	kindsMu sync.RWMutex
	kinds   = map[string]*Kind{}
)

var kindName = regexp.MustCompile(`^[a-z][a-z0-9]*$`)

// RegisterKind adds a kind; it panics on an invalid or duplicate kind (a
// programming error, done from init).
func RegisterKind(k Kind) {
	_, isGRPC := k.Plugin.(plugin.GRPCPlugin)
	if !kindName.MatchString(k.Name) || !isGRPC || k.Probe == nil || k.Handshake.MagicCookieKey == "" {
		panic(fmt.Sprintf("subplugin: invalid kind %q", k.Name))
	}
	kindsMu.Lock()
	defer kindsMu.Unlock()
	if _, dup := kinds[k.Name]; dup {
		panic("subplugin: kind registered twice: " + k.Name)
	}
	kinds[k.Name] = &k
}

// LookupKind returns a registered kind.
func LookupKind(name string) (*Kind, bool) {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	k, ok := kinds[name]
	return k, ok
}

// Kinds lists the registered kind names, sorted.
func Kinds() []string {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	out := make([]string, 0, len(kinds))
	for n := range kinds {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
