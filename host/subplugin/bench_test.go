package subplugin

import (
	"context"
	"fmt"
	"testing"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/embed"
	"github.com/metaclaw-go/metaclaw/host/subplugin/hashembed"
)

// BenchmarkEmbed compares an Embed round trip to the reference plugin (gRPC
// over a unix socket with AutoMTLS) with the same algorithm in process.
func BenchmarkEmbed(b *testing.B) {
	o := testOptions(b)
	o.Logger = zerolog.Nop()
	plug, _ := openRef(b, o)
	inproc := hashembed.New(hashembed.DefaultDims)
	for _, n := range []int{1, 16, 128} {
		texts := make([]string, n)
		for i := range texts {
			texts[i] = fmt.Sprintf("memory %d: the user prefers concise answers and deploys with make release", i)
		}
		for _, c := range []struct {
			name string
			e    embed.Embedder
		}{{"grpc", plug}, {"inprocess", inproc}} {
			b.Run(fmt.Sprintf("%s/texts=%d", c.name, n), func(b *testing.B) {
				ctx := context.Background()
				for b.Loop() {
					if _, err := c.e.Embed(ctx, texts); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
