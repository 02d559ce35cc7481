package heapstat

import "testing"

// TestNowSeesPointerfulObjects: a thousand live 64-byte objects, each
// holding a pointer, show as about a thousand objects and 64 KB of live
// and scannable heap; dropping them takes them off again.
func TestNowSeesPointerfulObjects(t *testing.T) {
	type node struct {
		next *node
		pad  [56]byte
	}
	before := Now()
	nodes := make([]*node, 1000)
	for i := range nodes {
		nodes[i] = &node{}
		if i > 0 {
			nodes[i].next = nodes[i-1]
		}
	}
	d := Now().Minus(before)
	if d.Objects < 1000 || d.Objects > 1100 {
		t.Errorf("objects +%d, want about 1000", d.Objects)
	}
	if d.Live < 64_000 || d.Scan < 8_000 {
		t.Errorf("live +%d, scan +%d bytes; want at least 64,000 live and 8,000 scannable", d.Live, d.Scan)
	}
	if nodes[len(nodes)-1].next == nil {
		t.Fatal("unreachable: the chain keeps every node live until here")
	}
	nodes = nil
	if after := Now().Minus(before); after.Objects > 100 {
		t.Errorf("after dropping them, objects still +%d", after.Objects)
	}
}
