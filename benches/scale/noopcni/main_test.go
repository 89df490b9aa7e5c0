package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func call(t *testing.T, env map[string]string, stdin string) (map[string]any, *cniError) {
	t.Helper()
	var out bytes.Buffer
	_, err := run(func(k string) string { return env[k] }, strings.NewReader(stdin), &out)
	doc := map[string]any{}
	if out.Len() > 0 {
		if jerr := json.Unmarshal(out.Bytes(), &doc); jerr != nil {
			t.Fatalf("stdout is not JSON: %q", out.String())
		}
	}
	return doc, err
}

func conf(version string) string {
	return `{"cniVersion":"` + version + `","name":"n","type":"noopcni"}`
}

var addEnv = map[string]string{"CNI_COMMAND": "ADD", "CNI_CONTAINERID": "c1", "CNI_NETNS": "/run/netns/x", "CNI_IFNAME": "net1"}

func TestAddAnswersTheResultOfTheVersionAsked(t *testing.T) {
	for _, version := range supported {
		doc, err := call(t, addEnv, conf(version))
		if err != nil {
			t.Fatalf("%s: %+v", version, err)
		}
		if doc["cniVersion"] != version {
			t.Fatalf("%s: cniVersion %v", version, doc["cniVersion"])
		}
		ip := doc["ips"].([]any)[0].(map[string]any)
		if _, has := ip["version"]; has != (version < "1.0.0") {
			t.Fatalf("%s: ips[0] %v", version, ip)
		}
		iface := doc["interfaces"].([]any)[0].(map[string]any)
		if iface["name"] != "net1" || iface["sandbox"] != "/run/netns/x" {
			t.Fatalf("%s: interfaces[0] %v", version, iface)
		}
	}
}

func TestEveryVerbAnswersAndBadInputIsACniError(t *testing.T) {
	version, _ := call(t, map[string]string{"CNI_COMMAND": "VERSION"}, "")
	if version["supportedVersions"] == nil {
		t.Fatalf("VERSION: %v", version)
	}
	for _, verb := range []string{"CHECK", "DEL", "GC", "STATUS"} {
		env := map[string]string{"CNI_COMMAND": verb, "CNI_CONTAINERID": "c1", "CNI_NETNS": "/n", "CNI_IFNAME": "eth0"}
		if doc, err := call(t, env, conf("1.1.0")); err != nil || len(doc) != 0 {
			t.Fatalf("%s: %v %+v", verb, doc, err)
		}
	}
	cases := []struct {
		env   map[string]string
		stdin string
		code  int
	}{
		{addEnv, "not json", errDecoding},
		{addEnv, conf("9.9.9"), errIncompatibleVersion},
		{addEnv, `{"cniVersion":"1.0.0"}`, errUnsupportedField},
		{map[string]string{"CNI_COMMAND": "ADD"}, conf("1.0.0"), errInvalidEnvironment},
		{map[string]string{"CNI_COMMAND": "CHECK", "CNI_CONTAINERID": "c", "CNI_NETNS": "/n", "CNI_IFNAME": "e"}, conf("0.3.1"), errIncompatibleVersion},
		{map[string]string{"CNI_COMMAND": "GC"}, conf("1.0.0"), errIncompatibleVersion},
		{map[string]string{"CNI_COMMAND": "FLY"}, conf("1.0.0"), errInvalidEnvironment},
		{addEnv, strings.Repeat(" ", maxConfig+1), errDecoding},
	}
	for _, c := range cases {
		if _, err := call(t, c.env, c.stdin); err == nil || err.Code != c.code {
			t.Fatalf("%v %.40q: %+v, want code %d", c.env, c.stdin, err, c.code)
		}
	}
}
