package subplugin

import (
	"encoding/json"
	"strings"
	"sync"
)

// tail keeps the last bytes a plugin wrote on stderr, so that a plugin that
// dies during its handshake can be explained ("This binary is a plugin…",
// a Python traceback, …).
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTail(max int) *tail { return &tail{max: max} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// String is the kept text on one line, newlines shown as " | ".
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.buf)), "\n")
	var keep []string
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" && !isDebugJSON(l) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, " | ")
}

// isDebugJSON tells hclog JSON lines below info level (go-plugin's own
// chatter such as "plugin address"), which explain nothing.
func isDebugJSON(l string) bool {
	if !strings.HasPrefix(l, "{") {
		return false
	}
	var e struct {
		Level string `json:"@level"`
	}
	if json.Unmarshal([]byte(l), &e) != nil {
		return false
	}
	return e.Level == "trace" || e.Level == "debug"
}
