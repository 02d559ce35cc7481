//go:build !linux

package core

// lockNicedThread does nothing where threads have no niceness of their own.
func lockNicedThread(int) (onMain bool, err error) { return false, nil }
