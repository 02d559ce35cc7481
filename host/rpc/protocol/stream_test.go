package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// serveLines runs a mux with an echo method over the given input and
// returns every line written back.
func serveLines(t testing.TB, input string, max int) []string {
	t.Helper()
	m := NewMux()
	m.Handle("echo", func(ctx context.Context, p json.RawMessage) (any, error) { return p, nil })
	var out bytes.Buffer
	w := &lockedWriter{w: &out}
	conn := m.Serve(context.Background(), strings.NewReader(input), w, nil, ServeOptions{MaxMessage: max})
	select {
	case <-conn.DisconnectNotify():
	case <-time.After(10 * time.Second):
		t.Fatal("connection did not end at EOF")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

func TestStreamAnswersEverythingBeforeEOF(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":1}}` + "\n" +
		"garbage\n\n   \n" +
		`{"jsonrpc":"2.0","id":"x","method":"echo","params":[1]}` + "\r\n" +
		`{"jsonrpc":"2.0","id":3,"method":"echo","params":{"pad":"` + strings.Repeat("z", 2000) + `"}}` + "\n" +
		`{"jsonrpc":"2.0","id":4,"method":"echo"}` // last line without newline
	lines := serveLines(t, in, 1024)
	var codes []string
	for _, l := range lines {
		var m struct {
			ID    json.RawMessage `json:"id"`
			Error *struct{ Code int64 }
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("answer not JSON: %q", l)
		}
		c := "ok"
		if m.Error != nil {
			c = strconv.FormatInt(m.Error.Code, 10)
		}
		codes = append(codes, string(m.ID)+"="+c)
	}
	sort.Strings(codes)
	if got := strings.Join(codes, " "); got != `"x"=ok 1=ok 4=ok null=-32004 null=-32700` {
		t.Fatalf("answers %s", got)
	}
}

func TestCheck(t *testing.T) {
	for line, ok := range map[string]bool{
		`{"jsonrpc":"2.0","id":1,"method":"m"}`:                    true,
		`{"jsonrpc":"2.0","method":"m"}`:                           true,
		`{"id":"a","method":"m","params":null}`:                    true,
		`{"jsonrpc":"2.0","id":1,"result":{}}`:                     true,
		`{"jsonrpc":"2.0","id":1,"error":{"code":1}}`:              true,
		`{"jsonrpc":"2.0","id":-1,"method":"m"}`:                   false,
		`{"jsonrpc":"2.0","id":1e3,"method":"m"}`:                  false,
		`{"jsonrpc":"2.0","id":true,"method":"m"}`:                 false,
		`{"jsonrpc":"2.0","id":1,"method":"m","result":1}`:         false,
		`{"jsonrpc":"2.0","id":1,"method":null}`:                   false,
		`{"jsonrpc":2,"id":1,"method":"m"}`:                        false,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":1}`:         false,
		`{"jsonrpc":"2.0","id":99999999999999999999,"method":"m"}`: false,
		`null`:  false,
		`"str"`: false,
	} {
		if _, _, _, got := Check([]byte(line)); got != ok {
			t.Errorf("Check(%s) = %v, want %v", line, got, ok)
		}
	}
}

// FuzzStream feeds arbitrary bytes to a served connection: it must never
// panic or hang, and everything it writes must be one JSON object per line.
func FuzzStream(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":[1,2]}}` + "\n"))
	f.Add([]byte("garbage\n{\"id\":1}\n[]\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"\u0000","method":"echo"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":18446744073709551615,"method":"echo"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":null}` + "\n" + `{"method":"echo","params":{"x":"\ud800"}}`))
	f.Add([]byte(strings.Repeat(`{"a":`, 50)))
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := serveLines(t, string(data), 512)
		for _, l := range lines {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("answer is not a JSON object: %q", l)
			}
			if m["jsonrpc"] != "2.0" {
				t.Fatalf("answer without jsonrpc 2.0: %q", l)
			}
		}
	})
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
