package memory

import (
	"encoding/binary"
	"math"
	"time"
	"unsafe"
)

// The index's long-lived data is laid out for the garbage collector: every
// cycle marks the live heap, and its work is the pointers it follows, not
// the bytes held. So the index keeps no Unit: each unit is encoded into a
// byte arena (decoded only when a caller asks for the unit itself), its
// derived record sits in chunks of a few hundred (no object per unit), and
// the text and term ids the record names are offsets into arenas of large
// chunks (indexrec.go). The row table, the derived records and the arenas'
// chunks hold no pointers: the collector skips them.
//
// An arena chunk is written once, at its end, and never changed after: a
// string or slice handed out (into a Hit, say) stays valid for as long as it
// is referenced, whatever becomes of the index. Removed units leave their
// bytes behind; when the dead outweigh the live, the index asks the poller
// to rebuild it (wasteful).

// arenaChunk is the size of an arena chunk, in elements.
const arenaChunk = 64 << 10

// arena hands out slices of large chunks, each written once.
type arena[T any] struct {
	chunks [][]T
	live   int // elements held by indexed rows
	dead   int // elements of removed rows
}

// aref locates a slice of an arena (no pointer: a row table of them is
// not scanned).
type aref struct {
	chunk, off, n uint32
}

// alloc returns n fresh elements (zero length is no slice) and where they
// are.
func (a *arena[T]) alloc(n int) ([]T, aref) {
	if n == 0 {
		return nil, aref{}
	}
	last := len(a.chunks) - 1
	if last < 0 || cap(a.chunks[last])-len(a.chunks[last]) < n {
		a.chunks = append(a.chunks, make([]T, 0, max(arenaChunk, n)))
		last++
	}
	c := a.chunks[last]
	off := len(c)
	a.chunks[last] = c[:off+n]
	a.live += n
	return c[off : off+n : off+n], aref{uint32(last), uint32(off), uint32(n)}
}

// at returns the elements of r.
func (a *arena[T]) at(r aref) []T {
	if r.n == 0 {
		return nil
	}
	return a.chunks[r.chunk][r.off : r.off+r.n : r.off+r.n]
}

// drop counts n elements as no longer held.
func (a *arena[T]) drop(n int) {
	a.live -= n
	a.dead += n
}

// wasteful: more of the arena is dead than live (and enough to matter).
func (a *arena[T]) wasteful() bool {
	return a.dead > 4*arenaChunk && a.dead > a.live
}

// arenaStr copies s into a and returns the copy (a view of the arena).
func arenaStr(a *arena[byte], s string) string {
	if len(s) == 0 {
		return ""
	}
	b, _ := a.alloc(len(s))
	copy(b, s)
	return unsafe.String(&b[0], len(b))
}

// chunked is a table of T by slot, in chunks that never move: a pointer to
// an element stays valid while the table lives, and there is one object per
// chunk, not per element.
type chunked[T any] struct {
	chunks []*[chunkedN]T
}

const chunkedN = 256

// get returns the element of a slot the table holds (readers: it never
// grows the table).
func (c *chunked[T]) get(slot int32) *T {
	return &c.chunks[int(slot)/chunkedN][int(slot)%chunkedN]
}

// at returns slot's element, adding chunks up to it (writers).
func (c *chunked[T]) at(slot int32) *T {
	i := int(slot) / chunkedN
	for len(c.chunks) <= i {
		c.chunks = append(c.chunks, new([chunkedN]T))
	}
	return &c.chunks[i][int(slot)%chunkedN]
}

// The unit codec: a unit as bytes, decoded to the same Unit (strings,
// nil or empty lists, times with their instant and UTC or local zone,
// unset optional times). A time in another zone comes back local.

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendStrs writes a list, nil apart from empty.
func appendStrs(b []byte, ss []string) []byte {
	if ss == nil {
		return binary.AppendUvarint(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(ss))+1)
	for _, s := range ss {
		b = appendStr(b, s)
	}
	return b
}

// Time kinds: zero, local, UTC.
const (
	timeZero = iota
	timeLocal
	timeUTC
)

func appendTime(b []byte, t time.Time) []byte {
	switch {
	case t == time.Time{}:
		return append(b, timeZero)
	case t.Location() == time.UTC:
		b = append(b, timeUTC)
	default:
		b = append(b, timeLocal)
	}
	b = binary.AppendVarint(b, t.Unix())
	return binary.AppendUvarint(b, uint64(t.Nanosecond()))
}

func appendOptTime(b []byte, t *time.Time) []byte {
	if t == nil {
		return append(b, 0)
	}
	return appendTime(append(b, 1), *t)
}

// encodeUnit appends u's encoding to b.
func encodeUnit(b []byte, u *Unit) []byte {
	for _, s := range []string{u.ID, u.Scope, u.Agent, string(u.Type), u.Content, u.Subject, u.Value, u.Status,
		u.SupersededBy, u.Origin, u.SourceSession, u.vis, u.msg} {
		b = appendStr(b, s)
	}
	b = appendStrs(b, u.Entities)
	b = appendStrs(b, u.Tags)
	if u.SourceTurns == nil {
		b = binary.AppendUvarint(b, 0)
	} else {
		b = binary.AppendUvarint(b, uint64(len(u.SourceTurns))+1)
		for _, t := range u.SourceTurns {
			b = binary.AppendVarint(b, t)
		}
	}
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(u.Importance))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(u.Confidence))
	for _, n := range []int64{int64(u.Mentions), int64(u.InjectedCount), u.rowid, int64(u.tokens)} {
		b = binary.AppendVarint(b, n)
	}
	for _, t := range []time.Time{u.SaidAt, u.LastSeenAt, u.CreatedAt, u.UpdatedAt} {
		b = appendTime(b, t)
	}
	b = appendOptTime(b, u.ExpiresAt)
	return appendOptTime(b, u.LastInjectedAt)
}

// unitReader decodes what encodeUnit wrote (the index wrote it: it is
// well formed).
type unitReader struct{ b []byte }

func (r *unitReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	r.b = r.b[n:]
	return v
}

func (r *unitReader) varint() int64 {
	v, n := binary.Varint(r.b)
	r.b = r.b[n:]
	return v
}

func (r *unitReader) str() string {
	n := r.uvarint()
	s := string(r.b[:n]) // a copy: the unit outlives the arena's chunk
	r.b = r.b[n:]
	return s
}

func (r *unitReader) strs() []string {
	n := r.uvarint()
	if n == 0 {
		return nil
	}
	out := make([]string, n-1)
	for i := range out {
		out[i] = r.str()
	}
	return out
}

func (r *unitReader) float() float64 {
	v := math.Float64frombits(binary.LittleEndian.Uint64(r.b))
	r.b = r.b[8:]
	return v
}

func (r *unitReader) time() time.Time {
	kind := r.b[0]
	r.b = r.b[1:]
	if kind == timeZero {
		return time.Time{}
	}
	t := time.Unix(r.varint(), int64(r.uvarint()))
	if kind == timeUTC {
		t = t.UTC()
	}
	return t
}

func (r *unitReader) optTime() *time.Time {
	set := r.b[0]
	r.b = r.b[1:]
	if set == 0 {
		return nil
	}
	t := r.time()
	return &t
}

// decodeUnit reads a unit encodeUnit wrote.
func decodeUnit(b []byte) Unit {
	r := &unitReader{b}
	var u Unit
	for _, p := range []*string{&u.ID, &u.Scope, &u.Agent, (*string)(&u.Type), &u.Content, &u.Subject, &u.Value, &u.Status,
		&u.SupersededBy, &u.Origin, &u.SourceSession, &u.vis, &u.msg} {
		*p = r.str()
	}
	u.Entities, u.Tags = r.strs(), r.strs()
	if n := r.uvarint(); n > 0 {
		u.SourceTurns = make([]int64, n-1)
		for i := range u.SourceTurns {
			u.SourceTurns[i] = r.varint()
		}
	}
	u.Importance, u.Confidence = r.float(), r.float()
	u.Mentions, u.InjectedCount, u.rowid, u.tokens = int(r.varint()), int(r.varint()), r.varint(), int(r.varint())
	u.SaidAt, u.LastSeenAt, u.CreatedAt, u.UpdatedAt = r.time(), r.time(), r.time(), r.time()
	u.ExpiresAt, u.LastInjectedAt = r.optTime(), r.optTime()
	return u
}
