package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

const (
	testDriver = "net.braid-test.example"
	testNode   = "node-a"
)

func testConfig() config {
	return config{driverName: testDriver, nodeName: testNode, resourceName: "braid-test.example/nic"}
}

// claim is an allocated claim of `devices` of this node's pool, stored in `client` too (the
// driver publishes network data through the API).
func claim(t *testing.T, client *fake.Clientset, name string, uid types.UID, devices ...string) *resourceapi.ResourceClaim {
	t.Helper()
	results := make([]resourceapi.DeviceRequestAllocationResult, 0, len(devices))
	for _, device := range devices {
		results = append(results, resourceapi.DeviceRequestAllocationResult{
			Request: "nics", Driver: testDriver, Pool: testNode, Device: device,
		})
	}
	c := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: uid},
		Status: resourceapi.ResourceClaimStatus{
			Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: results}},
		},
	}
	created, err := client.ResourceV1().ResourceClaims("default").Create(context.Background(), c, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating claim %s: %v", name, err)
	}
	return created
}

func newTestDriver(t *testing.T, client *fake.Clientset, state string) *driver {
	t.Helper()
	devices := map[string]string{"veth-a": "02:00:00:00:00:0a", "veth-b": "02:00:00:00:00:0b"}
	_, cancel := context.WithCancelCause(context.Background())
	d, err := newDriver(testConfig(), devices, client, state, cancel)
	if err != nil {
		t.Fatalf("newDriver: %v", err)
	}
	return d
}

func prepare(t *testing.T, d *driver, c *resourceapi.ResourceClaim) kubeletplugin.PrepareResult {
	t.Helper()
	results, err := d.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{c})
	if err != nil {
		t.Fatalf("PrepareResourceClaims: %v", err)
	}
	return results[c.UID]
}

func TestADeviceIsPreparedForOneClaimAtATime(t *testing.T) {
	client := fake.NewClientset()
	d := newTestDriver(t, client, filepath.Join(t.TempDir(), "state.json"))
	first := claim(t, client, "first", "uid-1", "veth-a")
	second := claim(t, client, "second", "uid-2", "veth-a")

	if got := prepare(t, d, first); got.Err != nil || len(got.Devices) != 1 || got.Devices[0].DeviceName != "veth-a" {
		t.Fatalf("first claim: %+v", got)
	}
	got := prepare(t, d, second)
	if got.Err == nil || !strings.Contains(got.Err.Error(), "prepared for claim uid-1") {
		t.Fatalf("a device held by another claim must be refused, got %+v", got)
	}
	if again := prepare(t, d, first); again.Err != nil {
		t.Fatalf("preparing the same claim again: %v", again.Err)
	}

	unprepared, err := d.UnprepareResourceClaims(context.Background(),
		[]kubeletplugin.NamespacedObject{{UID: first.UID}})
	if err != nil || unprepared[first.UID] != nil {
		t.Fatalf("unprepare: %v %v", err, unprepared)
	}
	if got := prepare(t, d, second); got.Err != nil {
		t.Fatalf("once released the device goes to the other claim: %v", got.Err)
	}
}

func TestPreparingPublishesEachDevicesNetworkData(t *testing.T) {
	client := fake.NewClientset()
	d := newTestDriver(t, client, filepath.Join(t.TempDir(), "state.json"))
	c := claim(t, client, "nics", "uid-1", "veth-a", "veth-b")
	if got := prepare(t, d, c); got.Err != nil {
		t.Fatalf("prepare: %v", got.Err)
	}
	stored, err := client.ResourceV1().ResourceClaims("default").Get(context.Background(), "nics", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	published := map[string]string{}
	for _, status := range stored.Status.Devices {
		if status.NetworkData == nil || status.NetworkData.InterfaceName != status.Device {
			t.Fatalf("device %s: network data %+v", status.Device, status.NetworkData)
		}
		published[status.Device] = status.NetworkData.HardwareAddress
	}
	want := map[string]string{"veth-a": "02:00:00:00:00:0a", "veth-b": "02:00:00:00:00:0b"}
	if len(published) != len(want) || published["veth-a"] != want["veth-a"] || published["veth-b"] != want["veth-b"] {
		t.Fatalf("published %v, want %v", published, want)
	}
}

func TestAClaimOfAnotherNodeOrNotAllocatedIsRefused(t *testing.T) {
	client := fake.NewClientset()
	d := newTestDriver(t, client, filepath.Join(t.TempDir(), "state.json"))
	unknown := claim(t, client, "unknown", "uid-1", "veth-z")
	if got := prepare(t, d, unknown); got.Err == nil || !strings.Contains(got.Err.Error(), "not one of this node's") {
		t.Fatalf("a device of no pool here must be refused, got %+v", got)
	}
	pending := claim(t, client, "pending", "uid-2")
	pending.Status.Allocation = nil
	if got := prepare(t, d, pending); got.Err == nil || !strings.Contains(got.Err.Error(), "not allocated") {
		t.Fatalf("a claim not allocated must be refused, got %+v", got)
	}
}

func TestTheStateSurvivesARestartAndBadStateIsRefused(t *testing.T) {
	client := fake.NewClientset()
	state := filepath.Join(t.TempDir(), "state.json")
	d := newTestDriver(t, client, state)
	first := claim(t, client, "first", "uid-1", "veth-a")
	if got := prepare(t, d, first); got.Err != nil {
		t.Fatalf("prepare: %v", got.Err)
	}
	restarted := newTestDriver(t, client, state)
	second := claim(t, client, "second", "uid-2", "veth-a")
	if got := prepare(t, restarted, second); got.Err == nil {
		t.Fatal("after a restart the device is still held by the first claim")
	}

	if err := os.WriteFile(state, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, cancel := context.WithCancelCause(context.Background())
	if _, err := newDriver(testConfig(), nil, client, state, cancel); err == nil {
		t.Fatal("a state file that is not JSON must be refused")
	}
	if err := os.WriteFile(state, make([]byte, maxStateBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := newDriver(testConfig(), nil, client, state, cancel); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("an oversized state file must be refused, got %v", err)
	}
}
