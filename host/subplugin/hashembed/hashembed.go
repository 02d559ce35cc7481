// Package hashembed is a deterministic, dependency-free text embedder: a
// signed feature-hashing of words and character trigrams, with sublinear term
// weights, L2-normalised. It needs no model and no network, so it works
// offline and gives reproducible vectors; it captures lexical similarity
// (shared words, shared word pieces such as "deploy"/"deployment"), not
// meaning. It is MetaClaw's built-in "hashing" embedder and the algorithm of
// the reference embedder plugin (cmd/metaclaw-embedder-ref).
package hashembed

import (
	"context"
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

// DefaultDims is the default vector length.
const DefaultDims = 384

// MinDims is the smallest accepted vector length.
const MinDims = 8

// Algorithm names the feature set and hashing; it is part of Name, so vectors
// made by a different algorithm are never compared with these.
const Algorithm = "hashing-ngram-v1"

// Feature weights: whole words carry most of the signal, trigrams add
// robustness to inflection and typos.
const (
	wordWeight    = 1.0
	trigramWeight = 0.4
)

// Embedder is safe for concurrent use.
type Embedder struct{ dims int }

// New returns an embedder of dims dimensions (DefaultDims when dims <= 0;
// at least MinDims).
func New(dims int) *Embedder {
	if dims <= 0 {
		dims = DefaultDims
	}
	if dims < MinDims {
		dims = MinDims
	}
	return &Embedder{dims: dims}
}

// Name identifies the embedding space, e.g. "hashing-ngram-v1-384".
func (e *Embedder) Name() string { return fmt.Sprintf("%s-%d", Algorithm, e.dims) }

// Dimensions is the vector length.
func (e *Embedder) Dimensions() int { return e.dims }

// Embed returns one unit vector per text. A text without any letter or digit
// maps to the zero vector.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	f := newFeatures()
	for i, t := range texts {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		out[i] = e.vector(t, f)
	}
	return out, nil
}

// Vector embeds one text.
func (e *Embedder) Vector(text string) []float32 { return e.vector(text, newFeatures()) }

// features counts feature hashes in order of first appearance, so the sums
// below always run in the same order and the vectors are bit-for-bit
// reproducible.
type features struct {
	index map[uint64]int
	list  []feature
}

type feature struct {
	hash          uint64
	weight, count float64
}

func newFeatures() *features { return &features{index: map[uint64]int{}} }

func (f *features) add(h uint64, w float64) {
	if i, ok := f.index[h]; ok {
		f.list[i].count++
		return
	}
	f.index[h] = len(f.list)
	f.list = append(f.list, feature{hash: h, weight: w, count: 1})
}

func (f *features) reset() {
	clear(f.index)
	f.list = f.list[:0]
}

func (e *Embedder) vector(text string, f *features) []float32 {
	defer f.reset()
	lower := strings.ToLower(text)
	var runes []rune
	start := -1
	flush := func(end int) {
		tok := lower[start:end]
		start = -1
		f.add(hashString(fnvOffset^'w', tok), wordWeight)
		// Trigrams of "<tok>", so prefixes and suffixes count.
		runes = append(runes[:0], '<')
		for _, r := range tok {
			runes = append(runes, r)
		}
		runes = append(runes, '>')
		for i := 0; i+3 <= len(runes); i++ {
			h := uint64(fnvOffset ^ 't')
			for _, r := range runes[i : i+3] {
				h = hashRune(h, r)
			}
			f.add(mix(h), trigramWeight)
		}
	}
	for i, r := range lower {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			flush(i)
		}
	}
	if start >= 0 {
		flush(len(lower))
	}

	acc := make([]float64, e.dims)
	for _, x := range f.list {
		// The explicit conversion rounds the product, which rules out
		// fused multiply-adds that would differ between platforms.
		w := float64(x.weight * float64(1+math.Log(x.count)))
		idx := int(x.hash % uint64(e.dims))
		if x.hash>>63 == 1 {
			w = -w
		}
		acc[idx] += w
	}
	var sum float64
	for _, v := range acc {
		sum += float64(v * v)
	}
	vec := make([]float32, e.dims)
	if sum == 0 {
		return vec
	}
	inv := 1 / math.Sqrt(sum)
	for i, v := range acc {
		vec[i] = float32(v * inv)
	}
	return vec
}

// FNV-1a, 64 bit.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func hashString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return mix(h)
}

func hashRune(h uint64, r rune) uint64 {
	var b [utf8.UTFMax]byte
	n := utf8.EncodeRune(b[:], r)
	for _, c := range b[:n] {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}

// mix is a finaliser (splitmix64) so that the low bits used for the bucket
// and the top bit used for the sign are both well spread.
func mix(h uint64) uint64 {
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}
