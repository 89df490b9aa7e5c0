// Command noopcni is a CNI plugin that attaches nothing: it answers every verb of the CNI
// specification (https://www.cni.dev/docs/spec/) as a plugin that succeeded would, without
// touching the kernel, so that a scale run measures the meta-plugin and the API server rather
// than the kernel. ADD answers, as a plugin that made them would, the interface CNI_IFNAME in the
// sandbox and one address derived from the container ID, in the result format of the cniVersion asked for (0.3.0 to 1.1.0); CHECK, DEL,
// GC and STATUS answer nothing; VERSION lists the versions it speaks. Bad input is answered with
// a CNI error on stdout and exit status 1. Test-only: built by build.sh into .cache/scale/bin.
package main

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"slices"
)

var supported = []string{"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"}

// The most stdin may hold: a network configuration is a few KiB.
const maxConfig = 1 << 20

// CNI error codes (the specification's "Error" section).
const (
	errIncompatibleVersion = 1
	errUnsupportedField    = 2
	errInvalidEnvironment  = 4
	errDecoding            = 6
)

type cniError struct {
	CNIVersion string `json:"cniVersion"`
	Code       int    `json:"code"`
	Msg        string `json:"msg"`
	Details    string `json:"details,omitempty"`
}

type netConf struct {
	CNIVersion string `json:"cniVersion"`
	Name       string `json:"name"`
	Type       string `json:"type"`
}

func main() {
	version, err := run(os.Getenv, os.Stdin, os.Stdout)
	if err != nil {
		err.CNIVersion = version
		_ = json.NewEncoder(os.Stdout).Encode(err)
		os.Exit(1)
	}
}

func run(env func(string) string, in io.Reader, out io.Writer) (string, *cniError) {
	command := env("CNI_COMMAND")
	if command == "VERSION" {
		return "", write(out, map[string]any{"cniVersion": "1.1.0", "supportedVersions": supported})
	}
	conf, err := readConf(in)
	if err != nil {
		return "1.1.0", err
	}
	if !slices.Contains(supported, conf.CNIVersion) {
		return "1.1.0", &cniError{Code: errIncompatibleVersion,
			Msg: fmt.Sprintf("cniVersion %q is not one of %v", conf.CNIVersion, supported)}
	}
	switch command {
	case "ADD":
		if err := need(env, "CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"); err != nil {
			return conf.CNIVersion, err
		}
		return conf.CNIVersion, write(out, result(conf.CNIVersion, env))
	case "CHECK":
		if conf.CNIVersion < "0.4.0" {
			return conf.CNIVersion, &cniError{Code: errIncompatibleVersion,
				Msg: "CHECK needs cniVersion 0.4.0 or later"}
		}
		return conf.CNIVersion, need(env, "CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME")
	case "DEL":
		return conf.CNIVersion, need(env, "CNI_CONTAINERID", "CNI_IFNAME")
	case "GC", "STATUS":
		if conf.CNIVersion != "1.1.0" {
			return conf.CNIVersion, &cniError{Code: errIncompatibleVersion,
				Msg: command + " needs cniVersion 1.1.0"}
		}
		return conf.CNIVersion, nil
	}
	return conf.CNIVersion, &cniError{Code: errInvalidEnvironment,
		Msg: fmt.Sprintf("CNI_COMMAND %q is not a CNI verb", command)}
}

func readConf(in io.Reader) (*netConf, *cniError) {
	data, err := io.ReadAll(io.LimitReader(in, maxConfig+1))
	if err != nil || len(data) > maxConfig {
		return nil, &cniError{Code: errDecoding, Msg: "the network configuration is unreadable or over 1 MiB"}
	}
	var conf netConf
	if err := json.Unmarshal(data, &conf); err != nil {
		return nil, &cniError{Code: errDecoding, Msg: "the network configuration is not JSON", Details: err.Error()}
	}
	if conf.Name == "" || conf.Type == "" {
		return nil, &cniError{Code: errUnsupportedField, Msg: "the network configuration needs name and type"}
	}
	return &conf, nil
}

func need(env func(string) string, names ...string) *cniError {
	for _, name := range names {
		if env(name) == "" {
			return &cniError{Code: errInvalidEnvironment, Msg: name + " is not set"}
		}
	}
	return nil
}

// result is the ADD result: the interface in the sandbox and one address of 198.18.0.0/15 (RFC
// 2544's benchmarking range, never routed here) chosen by the container ID.
func result(version string, env func(string) string) map[string]any {
	hash := fnv.New32a()
	_, _ = hash.Write([]byte(env("CNI_CONTAINERID")))
	n := hash.Sum32()
	address := fmt.Sprintf("198.%d.%d.%d/15", 18+(n>>16)%2, (n>>8)%256, 1+n%254)
	iface := 0
	ip := map[string]any{"address": address, "interface": &iface}
	if version < "1.0.0" {
		ip["version"] = "4"
	}
	return map[string]any{
		"cniVersion": version,
		"interfaces": []map[string]any{{"name": env("CNI_IFNAME"), "sandbox": env("CNI_NETNS")}},
		"ips":        []map[string]any{ip},
	}
}

func write(out io.Writer, doc any) *cniError {
	if err := json.NewEncoder(out).Encode(doc); err != nil {
		return &cniError{Code: 999, Msg: "stdout: " + err.Error()}
	}
	return nil
}
