package config

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestSetSingleLine drives `config set` of one-line values on a real,
// hand-edited config file (and its CRLF twin) through yamledit.Doc, the one
// YAML editor: the file must be the original text with exactly one line
// changed or added (comments, blank lines, key order, quoting and line ends
// kept), and the reloaded config must hold the new value.
func TestSetSingleLine(t *testing.T) {
	base := readFile(t, filepath.Join("testdata", "set-golden.in.yaml"))
	const model = "  model_id: gpt-4.1  # cheap enough\n"
	tests := []struct {
		name, key, value string
		crlf             bool
		from, to         string // the one change to the file's text
		get              string // c.Get(key) afterwards ("" = value)
	}{
		{"plain replaces plain, comment kept", "llm.model_id", "gpt-4o", false, model, "  model_id: gpt-4o  # cheap enough\n", ""},
		{"yes is quoted (a bool to YAML 1.1)", "llm.model_id", "yes", false, model, "  model_id: \"yes\"  # cheap enough\n", ""},
		{"01 is quoted (a number)", "llm.model_id", "01", false, model, "  model_id: \"01\"  # cheap enough\n", ""},
		{"a leading ': ' is quoted", "llm.model_id", ": x", false, model, "  model_id: ': x'  # cheap enough\n", ""},
		{"a leading # is quoted", "llm.model_id", "#x", false, model, "  model_id: '#x'  # cheap enough\n", ""},
		{"' #' inside is quoted", "llm.model_id", "a #b", false, model, "  model_id: 'a #b'  # cheap enough\n", ""},
		{"the empty string", "llm.model_id", "", false, model, "  model_id: \"\"  # cheap enough\n", ""},
		{"non-ASCII stays plain", "llm.model_id", "modèle-ü/深度", false, model, "  model_id: modèle-ü/深度  # cheap enough\n", ""},
		{"an apostrophe stays plain", "llm.model_id", "it's", false, model, "  model_id: it's  # cheap enough\n", ""},
		{"double quotes kept", "scheduler.sleep_start", "22:30", false, "    sleep_start: \"23:00\"\n", "    sleep_start: \"22:30\"\n", ""},
		{"single quotes kept", "scheduler.sleep_end", "6:45", false, "    sleep_end: '07:00'\n", "    sleep_end: '6:45'\n", ""},
		{"integer in a 4-space section", "proxy.port", "8080", false, "    port: 30000\n", "    port: 8080\n", ""},
		{"boolean", "skills.enabled", "no", false, "    enabled: true\n", "    enabled: false\n", "false"},
		{"new key in a section, order kept", "scheduler.min_window_minutes", "20", false,
			"    sleep_end: '07:00'\n", "    sleep_end: '07:00'\n    min_window_minutes: 20\n", ""},
		{"new key fills the empty section", "log.level", "debug", false, "log:   # filled in later\n", "log:   # filled in later\n  level: debug\n", ""},
		{"list as a flow sequence, new section", "openrouter.fallback_models", "a/b, c/d", false,
			"# end of file\n", "openrouter:\n  fallback_models: [a/b, c/d]\n# end of file\n", "a/b,c/d"},
		{"CRLF: replace", "llm.model_id", "yes", true, model, "  model_id: \"yes\"  # cheap enough\n", ""},
		{"CRLF: non-ASCII", "llm.model_id", "ñandú", true, model, "  model_id: ñandú  # cheap enough\n", ""},
		{"CRLF: new key", "scheduler.min_window_minutes", "20", true,
			"    sleep_end: '07:00'\n", "    sleep_end: '07:00'\n    min_window_minutes: 20\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, from, to := base, tt.from, tt.to
			if tt.crlf {
				crlf := func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }
				src, from, to = crlf(src), crlf(from), crlf(to)
			}
			if !strings.Contains(src, from) {
				t.Fatalf("test bug: %q not in the file", from)
			}
			home := writeHome(t, map[string]string{ConfigFile: src, SecretsFile: "llm:\n  api_key: sk-in-secrets-0123456789abcdef\n"})
			if err := Set(home, tt.key, tt.value); err != nil {
				t.Fatal(err)
			}
			got := readFile(t, filepath.Join(home, ConfigFile))
			want := strings.Replace(src, from, to, 1)
			if got != want {
				t.Fatalf("file\n%q\nwant\n%q", got, want)
			}
			c, err := LoadWith(home, noEnv)
			if err != nil {
				t.Fatalf("reload: %v", err)
			}
			wantGet := tt.get
			if wantGet == "" {
				wantGet = tt.value
			}
			if v, _ := c.Get(tt.key); v != wantGet {
				t.Fatalf("%s = %q after reload, want %q", tt.key, v, wantGet)
			}
		})
	}
}
