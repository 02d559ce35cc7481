package sdk

// The Embedder, Trainer and Judge services are generated from their .proto files with
// protoc (Debian: protobuf-compiler), protoc-gen-go and protoc-gen-go-grpc
// (google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12,
// google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1). The output is
// committed, so building needs none of them.
//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative embedderpb/embedder.proto trainerpb/trainer.proto judgepb/judge.proto
