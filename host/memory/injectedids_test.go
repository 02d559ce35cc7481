package memory

import (
	"reflect"
	"testing"
)

// injectedIDsReference is how toTurn read a turn's injected ids before
// injectedIDs: json.Unmarshal into a []string, errors ignored (a type error
// leaves the elements it could decode), which is also injectedIDs' fallback.
var injectedIDsReference = injectedDecoded

var injectedIDsCases = []string{
	``, `[]`, ` [ ] `, `null`, `["memory:a"]`, `["memory:a","skill:b", "memory:c"]`, "[\n \"memory:a\" ,\t\"b\"\n]",
	`["a",]`, `["a" "b"]`, `["a"`, `["a"] x`, `[1]`, `["a",1,"b"]`, `{"a":1}`, `"memory:a"`, `["\u006dem"]`, `["a\"b"]`,
	"[\"caf\u00e9\"]", "[\"bad \xff\"]", "[\"ctl \x01\"]", `["\u2028"]`, `[null,"a"]`, `[""]`, `[[]]`, `["a"]]`, `[,"a"]`,
}

func TestInjectedIDsMatchesDecoder(t *testing.T) {
	for _, s := range injectedIDsCases {
		if got, want := injectedIDs(s), injectedIDsReference(s); !reflect.DeepEqual(got, want) {
			t.Errorf("injectedIDs(%q) = %#v, the decoder says %#v", s, got, want)
		}
	}
}

func FuzzInjectedIDs(f *testing.F) {
	for _, s := range injectedIDsCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := injectedIDs(s), injectedIDsReference(s); !reflect.DeepEqual(got, want) {
			t.Fatalf("injectedIDs(%q) = %#v, the decoder says %#v", s, got, want)
		}
	})
}
