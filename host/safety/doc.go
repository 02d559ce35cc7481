// Package safety holds the checks that guard what can reach a prompt later:
// evolved skills and memories are both injected into every future turn, so
// both are screened by the same rules (instructions to ignore or override,
// reveal secrets, send data to hosts, run fetch/upload commands, disable
// safety), and both paths redact secrets with the same redactor. It depends
// on nothing else in the host, so skills, memory and the proxy can share it.
package safety
