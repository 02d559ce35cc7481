//go:build !linux

package memory

func threadCPU() (int64, bool) { return 0, false }
