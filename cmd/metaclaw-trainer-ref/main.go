// Command metaclaw-trainer-ref is MetaClaw's reference Trainer sub-plugin,
// served over go-plugin's gRPC protocol with AutoMTLS. By default it trains
// the toy bigram model of internal/faketinker in process (a stand-in for a
// local GPU trainer: real gradients, real Adam, real checkpoints, no GPU);
// with -tinker-url it proxies to a Tinker-protocol service instead, with the
// key from METACLAW_TRAINER_API_KEY (or TINKER_API_KEY).
//
// It is started by the MetaClaw host, not by hand: install it as
// $METACLAW_HOME/plugins/metaclaw-trainer-ref and set rl.backend: plugin,
// plugins.trainer: ref.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/metaclaw-go/metaclaw/host/rl/backend"
	"github.com/metaclaw-go/metaclaw/host/rl/backend/tinker"
	"github.com/metaclaw-go/metaclaw/host/subplugin/sdk"
	"github.com/metaclaw-go/metaclaw/internal/faketinker"
)

// version is set with -ldflags "-X main.version=…".
var version = "dev"

// refBackend names the served backend and reports its losses.
type refBackend struct {
	*tinker.Client
	name string
}

func (r refBackend) Name() string    { return r.name }
func (r refBackend) Version() string { return version }
func (r refBackend) Losses() []string {
	return []string{"importance_sampling", "ppo", "cispo", "cross_entropy"}
}

var _ backend.Backend = refBackend{}

func main() {
	url := flag.String("tinker-url", "", "proxy to this Tinker-protocol service instead of training the toy model in process")
	flavor := flag.String("flavor", "tinker", "protocol flavor of -tinker-url: tinker or mint")
	flag.Parse()
	opts := tinker.Options{Flavor: tinker.Flavor(*flavor), BaseURL: *url}
	name := "tinker-proxy"
	if *url == "" {
		// The toy trainer: the fake service on a loopback port of this
		// process, with no latency.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, "metaclaw-trainer-ref:", err)
			os.Exit(1)
		}
		key := "tml-local-" + fmt.Sprint(time.Now().UnixNano())
		go func() { _ = http.Serve(ln, faketinker.New(faketinker.Options{APIKey: key})) }()
		opts = tinker.Options{BaseURL: "http://" + ln.Addr().String(), APIKey: key, HeartbeatInterval: time.Minute}
		name = "toy"
	} else {
		opts.APIKey = os.Getenv("METACLAW_TRAINER_API_KEY")
		if opts.APIKey == "" {
			opts.APIKey = os.Getenv("TINKER_API_KEY")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	c, err := tinker.Connect(ctx, opts)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "metaclaw-trainer-ref:", err)
		os.Exit(1)
	}
	defer c.Close()
	sdk.ServeTrainer(refBackend{Client: c, name: name})
}
