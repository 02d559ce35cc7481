package core

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/host/store"
)

// filledTurn sets every field of a store.Turn (by reflection, so a field
// added later is filled too) to a distinct value with characters JSON
// must escape.
func filledTurn(t *testing.T, seed int) *store.Turn {
	t.Helper()
	var turn store.Turn
	v := reflect.ValueOf(&turn).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		name := v.Type().Field(i).Name
		switch f.Kind() {
		case reflect.String:
			f.SetString(name + ` "quoted" <html> & \ back` + "\n\t\u2028 é \x01 " + strings.Repeat("x", seed))
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(1000*i + seed + 1))
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Struct:
			if f.Type() != reflect.TypeOf(time.Time{}) {
				t.Fatalf("store.Turn.%s: a field of a type the journal line does not write; add it to appendTurnLine", name)
			}
			f.Set(reflect.ValueOf(time.Date(2026, 12, 2, 6, 30, 1, 123456789+seed, time.FixedZone("x", 8*3600))))
		default:
			t.Fatalf("store.Turn.%s: a field of a kind the journal line does not write; add it to appendTurnLine", name)
		}
	}
	return &turn
}

func TestTurnLineRoundTrips(t *testing.T) {
	for seed := 0; seed < 3; seed++ {
		want := filledTurn(t, seed)
		if seed == 1 {
			want.RequestJSON = "bad utf-8 \xff\xfe here" // written as U+FFFD, like encoding/json
		}
		line, err := appendTurnLine(nil, want)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(string(line), "}\n") || strings.Count(string(line), "\n") != 1 {
			t.Fatalf("not one line: %q", line)
		}
		var got, viaStd store.Turn
		if err := json.Unmarshal(line, &got); err != nil {
			t.Fatalf("line does not decode: %v\n%s", err, line)
		}
		std, _ := json.Marshal(want)
		if err := json.Unmarshal(std, &viaStd); err != nil {
			t.Fatal(err)
		}
		if !got.CreatedAt.Equal(viaStd.CreatedAt) {
			t.Fatalf("CreatedAt %v, encoding/json gives %v", got.CreatedAt, viaStd.CreatedAt)
		}
		got.CreatedAt, viaStd.CreatedAt = time.Time{}, time.Time{}
		if !reflect.DeepEqual(got, viaStd) {
			t.Fatalf("decoded line differs from encoding/json's:\n got %+v\nwant %+v", got, viaStd)
		}
	}
}

func TestTurnLineOutOfRangeTimeIsAnError(t *testing.T) {
	turn := &store.Turn{CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	if _, err := appendTurnLine(nil, turn); err == nil {
		t.Fatal("a time encoding/json refuses was written")
	}
}

func BenchmarkTurnLine(b *testing.B) {
	turn := &store.Turn{SessionID: "s", Agent: "default", TurnType: TurnMain, ClientAPI: "openai", UpstreamAPI: "openai", Model: "m",
		RequestJSON:  `{"model":"m","messages":[{"role":"system","content":"` + strings.Repeat("You are a coding agent. ", 250) + `"}]}`,
		ResponseText: "Hello there.", Status: 200, CreatedAt: time.Now(), InjectedJSON: `["memory:abc","skill:x"]`}
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for i := 0; i < b.N; i++ {
			buf, _ = appendTurnLine(buf[:0], turn)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			json.Marshal(turn)
		}
	})
}
