package memory

import (
	"unsafe"
)

// The index's derived records hold no pointer, so their chunks are not
// scanned by the garbage collector: term ids and strings are offsets into
// the arenas, the visibility and type numbers in a small table of names,
// times instants. Ranking reads a derived made from a record (view): its
// slices and strings are views of the arenas (written once, never changed,
// so a view stays valid however the index changes after).

// drec is one unit's derived data as the index keeps it.
type drec struct {
	w     unitWeights
	sig   uint64
	said  instant
	ints  aref  // ids, sorted, then ents, in the ints arena
	text  aref  // line, id, then slot, in the text arena
	nIDs  int32 // ids (and sorted) each hold nIDs
	nEnts int32
	sigN  int32
	lineN int32
	idN   int32
	vis   int32 // in names
	typ   int32 // in names
}

// names numbers the few distinct strings the records name (visibilities,
// types): a record holds the number, not the string.
type names struct {
	strs []string
	ids  map[string]int32
}

func (n *names) id(s string) int32 {
	if id, ok := n.ids[s]; ok {
		return id
	}
	if n.ids == nil {
		n.ids = map[string]int32{}
	}
	id := int32(len(n.strs))
	n.strs = append(n.strs, s)
	n.ids[s] = id
	return id
}

// putDerived stores d (derived from a unit being added) as slot's record,
// copying its term ids and strings into the arenas.
func (ix *memIndex) putDerived(slot int32, d *derived) *drec {
	r := ix.drv.at(slot)
	nIDs := len(d.ids)
	ints, iref := ix.ints.alloc(2*nIDs + len(d.ents))
	copy(ints, d.ids)
	copy(ints[nIDs:], d.sorted)
	copy(ints[2*nIDs:], d.ents)
	text, tref := ix.text.alloc(len(d.line) + len(d.id) + len(d.slot))
	k := copy(text, d.line)
	k += copy(text[k:], d.id)
	copy(text[k:], d.slot)
	*r = drec{w: d.w, sig: d.sig, said: instantOf(d.said), ints: iref, text: tref, nIDs: int32(nIDs), nEnts: int32(d.nEnts),
		sigN: int32(d.sigN), lineN: int32(len(d.line)), idN: int32(len(d.id)), vis: ix.names.id(d.vis), typ: ix.names.id(string(d.typ))}
	return r
}

// view makes d the derived data of record r: its slices and strings are
// views of the arenas.
func (ix *memIndex) view(r *drec, d *derived) {
	ints := ix.ints.at(r.ints)
	n := int(r.nIDs)
	var line, id, slot string
	if r.text.n > 0 {
		text := ix.text.at(r.text)
		all := unsafe.String(&text[0], len(text))
		line, id, slot = all[:r.lineN], all[r.lineN:r.lineN+r.idN], all[r.lineN+r.idN:]
	}
	*d = derived{w: r.w, ids: ints[:n:n], sorted: ints[n : 2*n : 2*n], ents: ints[2*n:], nEnts: int(r.nEnts), line: line,
		sig: r.sig, sigN: int(r.sigN), id: id, said: r.said.time(), vis: ix.names.strs[r.vis], typ: Type(ix.names.strs[r.typ]), slot: slot}
}

// touchRecs reads, first, a word of each slot's record (its first and
// last cache lines) and row: loads independent of each other, which the
// processor overlaps, where view would wait for each record in turn (they
// are cache misses: scattered over the index). It returns what it read so
// the reads are kept.
func (ix *memIndex) touchRecs(slots []int32) int64 {
	var sum int64
	for _, slot := range slots {
		r := ix.drv.get(slot)
		sum += r.w.rowid + int64(r.typ) + ix.rows[slot].rowid
	}
	return sum
}

// visOf is the visibility of record r.
func (ix *memIndex) visOf(r *drec) string { return ix.names.strs[r.vis] }

// viewSlab holds the derived one query made of the index's records, in
// chunks that never move (the query's candidates point at them); release
// clears them, so that a pooled view keeps no arena alive.
type viewSlab struct {
	chunks []*[viewChunk]derived
	n      int
}

const viewChunk = 64

// next returns a derived to fill.
func (s *viewSlab) next() *derived {
	i := s.n / viewChunk
	if i == len(s.chunks) {
		s.chunks = append(s.chunks, new([viewChunk]derived))
	}
	d := &s.chunks[i][s.n%viewChunk]
	s.n++
	return d
}

func (s *viewSlab) reset() {
	for i := 0; i*viewChunk < s.n; i++ {
		clear(s.chunks[i][:min(viewChunk, s.n-i*viewChunk)])
	}
	s.n = 0
}
