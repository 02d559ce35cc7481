// Command faketinker runs the fake training services of internal/faketinker
// (Tinker or MinT) or internal/fakeweaver (Weaver) on a local port, for
// trying MetaClaw's rl mode by hand:
//
//	go run ./tools/faketinker -addr 127.0.0.1:8765 -key tml-dev
//	metaclaw config set rl.base_url http://127.0.0.1:8765
//	metaclaw config set rl.api_key tml-dev
//	metaclaw config set rl.model toy
//
// It listens on loopback only unless told otherwise and stops on Ctrl-C.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/metaclaw-go/metaclaw/internal/faketinker"
	"github.com/metaclaw-go/metaclaw/internal/fakeweaver"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8765", "listen address")
	key := flag.String("key", "", "the only API key accepted (default: any non-empty key)")
	flavor := flag.String("flavor", "tinker", "tinker, mint or weaver")
	latency := flag.Duration("latency", 0, "time each operation takes")
	longPoll := flag.Duration("long-poll", 200*time.Millisecond, "how long retrieve_future holds an unfinished future (tinker)")
	chunk := flag.Int("chunk-len", 1024, "fwdbwd_max_chunk_len advertised by client/config (tinker)")
	flag.Parse()

	var h http.Handler
	var closer func()
	switch strings.ToLower(*flavor) {
	case "tinker", "mint":
		s := faketinker.New(faketinker.Options{Flavor: faketinker.Flavor(strings.ToLower(*flavor)), APIKey: *key, Latency: *latency, LongPoll: *longPoll, FwdBwdMaxChunkLen: *chunk})
		h, closer = s, s.Close
	case "weaver":
		s := fakeweaver.New(fakeweaver.Options{APIKey: *key, Latency: *latency})
		h, closer = s, s.Close
	default:
		fmt.Fprintln(os.Stderr, "faketinker: -flavor must be tinker, mint or weaver")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "faketinker:", err)
		os.Exit(1)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("fake %s service on http://%s (models: %s)\n", *flavor, ln.Addr(), modelNames())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "faketinker:", err)
		os.Exit(1)
	}
	closer()
}

func modelNames() string {
	var n []string
	for _, m := range faketinker.DefaultModels() {
		n = append(n, m.Name)
	}
	return strings.Join(n, ", ")
}
