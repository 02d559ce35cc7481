package sdk

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	epb "github.com/metaclaw-go/metaclaw/host/subplugin/sdk/embedderpb"
	jpb "github.com/metaclaw-go/metaclaw/host/subplugin/sdk/judgepb"
	tpb "github.com/metaclaw-go/metaclaw/host/subplugin/sdk/trainerpb"
)

// TestGeneratedCodeMatchesProto checks the committed generated code against
// its .proto file without protoc (which CI does not install): every service,
// rpc, message and field of the source must be in the descriptor compiled
// into the .pb.go, with the same number, type and label, and nothing more.
// An edited .proto that was not regenerated (go generate) fails here.
func TestGeneratedCodeMatchesProto(t *testing.T) {
	for _, tc := range []struct {
		file string
		desc protoreflect.FileDescriptor
	}{
		{"embedderpb/embedder.proto", epb.File_embedderpb_embedder_proto},
		{"trainerpb/trainer.proto", tpb.File_trainerpb_trainer_proto},
		{"judgepb/judge.proto", jpb.File_judgepb_judge_proto},
	} {
		t.Run(tc.file, func(t *testing.T) {
			src, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			fromSource := protoOutline(t, string(src))
			fromCode := descOutline(tc.desc)
			if strings.Join(fromSource, "\n") != strings.Join(fromCode, "\n") {
				t.Errorf("%s and its generated code differ; run go generate ./host/subplugin/sdk/...\nsource:\n%s\ngenerated:\n%s",
					tc.file, strings.Join(fromSource, "\n"), strings.Join(fromCode, "\n"))
			}
		})
	}
	if got := epb.Embedder_ServiceDesc.ServiceName; got != EmbedderService {
		t.Errorf("generated service %s, sdk says %s", got, EmbedderService)
	}
}

var (
	protoComment = regexp.MustCompile(`(?m)//.*$`)
	protoPackage = regexp.MustCompile(`\bpackage ([\w.]+);`)
	protoBlock   = regexp.MustCompile(`\b(message|service) (\w+) \{([^{}]*)\}`)
	protoRPC     = regexp.MustCompile(`rpc (\w+)\((\w+)\) returns \((\w+)\);`)
	protoField   = regexp.MustCompile(`(?:(optional|repeated) )?(map<\w+, ?\w+>|[\w.]+) (\w+) = (\d+);`)
)

// protoOutline lists a flat .proto file (no nested messages, enums or
// oneofs: the contract files have none) as one line per element: messages
// first, then services, each in file order.
func protoOutline(t *testing.T, src string) []string {
	src = protoComment.ReplaceAllString(src, "")
	pkg := protoPackage.FindStringSubmatch(src)
	if pkg == nil {
		t.Fatal("no package")
	}
	blocks := protoBlock.FindAllStringSubmatch(src, -1)
	if n := len(regexp.MustCompile(`\b(message|service|enum|oneof) \w+`).FindAllString(src, -1)); n != len(blocks) {
		t.Fatalf("%d blocks, %d read: nested messages, enums or oneofs need a better outline", n, len(blocks))
	}
	var msgs, svcs []string
	for _, b := range blocks {
		if b[1] == "service" {
			svcs = append(svcs, "service "+b[2])
			for _, r := range protoRPC.FindAllStringSubmatch(b[3], -1) {
				svcs = append(svcs, fmt.Sprintf("  rpc %s(%s) %s", r[1], r[2], r[3]))
			}
			continue
		}
		msgs = append(msgs, "message "+b[2])
		for _, f := range protoField.FindAllStringSubmatch(b[3], -1) {
			msgs = append(msgs, fmt.Sprintf("  %s %s %s = %s", f[1], strings.ReplaceAll(f[2], " ", ""), f[3], f[4]))
		}
	}
	return append(append([]string{"package " + pkg[1]}, msgs...), svcs...)
}

// descOutline lists a compiled descriptor the way protoOutline lists its
// source (protoc keeps messages and services in file order).
func descOutline(fd protoreflect.FileDescriptor) []string {
	out := []string{"package " + string(fd.Package())}
	msgs := fd.Messages()
	for i := 0; i < msgs.Len(); i++ {
		m := msgs.Get(i)
		out = append(out, "message "+string(m.Name()))
		fields := m.Fields()
		for j := 0; j < fields.Len(); j++ {
			out = append(out, "  "+fieldOutline(fields.Get(j)))
		}
	}
	svcs := fd.Services()
	for i := 0; i < svcs.Len(); i++ {
		s := svcs.Get(i)
		out = append(out, "service "+string(s.Name()))
		for j := 0; j < s.Methods().Len(); j++ {
			m := s.Methods().Get(j)
			out = append(out, fmt.Sprintf("  rpc %s(%s) %s", m.Name(), m.Input().Name(), m.Output().Name()))
		}
	}
	return out
}

func fieldOutline(f protoreflect.FieldDescriptor) string {
	label := ""
	switch {
	case f.IsMap():
	case f.IsList():
		label = "repeated"
	case f.HasOptionalKeyword():
		label = "optional"
	}
	return fmt.Sprintf("%s %s %s = %d", label, typeName(f), f.Name(), f.Number())
}

func typeName(f protoreflect.FieldDescriptor) string {
	if f.IsMap() {
		return fmt.Sprintf("map<%s,%s>", typeName(f.MapKey()), typeName(f.MapValue()))
	}
	switch f.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return string(f.Message().Name())
	case protoreflect.EnumKind:
		return string(f.Enum().Name())
	}
	return f.Kind().String()
}
