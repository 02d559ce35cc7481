// Command inputs writes the golden corpus (host/rl/testdata) as the Go chat
// template sees it, for tools/rlgoldens/gen.mjs to render and tokenize with
// the reference implementation. Usage: go run ./tools/rlgoldens/inputs OUT.json
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/metaclaw-go/metaclaw/host/rl/tokenizer"
	"github.com/metaclaw-go/metaclaw/host/rl/tokfetch"
	"github.com/metaclaw-go/metaclaw/internal/rlgoldens"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "rlgoldens inputs:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) != 2 {
		return fmt.Errorf("usage: inputs OUT.json")
	}
	dir, err := tokfetch.DefaultDir("qwen3")
	if err != nil {
		return err
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return fmt.Errorf("%w (run `go run ./cmd/metaclaw rl fetch-tokenizer` first)", err)
	}
	in, err := rlgoldens.BuildInputs(tok)
	if err != nil {
		return err
	}
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return os.WriteFile(os.Args[1], data, 0o644)
}
