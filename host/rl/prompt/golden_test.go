package prompt_test

import (
	"testing"

	"github.com/metaclaw-go/metaclaw/host/rl/prompt"
	"github.com/metaclaw-go/metaclaw/internal/rlgoldens"
)

// TestGoldenEncodeChat renders and encodes every conversation of the corpus
// and compares text and ids, byte for byte, with the reference
// implementation's (tools/rlgoldens).
func TestGoldenEncodeChat(t *testing.T) {
	codec, err := prompt.Load(rlgoldens.TokenizerDir(t))
	if err != nil {
		t.Fatal(err)
	}
	cases, err := rlgoldens.ChatCases()
	if err != nil {
		t.Fatal(err)
	}
	g, err := rlgoldens.LoadGoldens()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]rlgoldens.ChatGolden{}
	for _, c := range g.Chat {
		want[c.Name] = c
	}
	if len(cases) != len(g.Chat) {
		t.Fatalf("%d cases but %d goldens: regenerate with tools/rlgoldens/run.sh", len(cases), len(g.Chat))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			w, ok := want[c.Name]
			if !ok {
				t.Fatalf("no golden for %s: regenerate with tools/rlgoldens/run.sh", c.Name)
			}
			p, err := codec.EncodeChat(c.Conv, c.Opts)
			if err != nil {
				t.Fatal(err)
			}
			rlgoldens.CheckChat(t, w, p.Text, p.IDs, codec.Tokenizer.Decode)
		})
	}
}
