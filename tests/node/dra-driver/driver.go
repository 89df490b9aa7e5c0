package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
)

const (
	attrResourceName resourceapi.QualifiedName = "k8s.cni.cncf.io/resourceName"
	attrDeviceID     resourceapi.QualifiedName = "k8s.cni.cncf.io/deviceID"
	// The state file is the driver's own; anything larger is not one it wrote.
	maxStateBytes = 1 << 20
)

// driver implements kubeletplugin.DRAPlugin. The helper serializes Prepare and Unprepare; the
// mutex guards the state against the background error handler anyway.
type driver struct {
	name         string
	pool         string
	resourceName string
	devices      map[string]string // device (interface) name -> MAC address
	client       kubernetes.Interface
	statePath    string
	cancel       context.CancelCauseFunc

	mu       sync.Mutex
	prepared map[types.UID][]string // claim -> its devices of this driver
}

func newDriver(conf config, devices map[string]string, client kubernetes.Interface, statePath string,
	cancel context.CancelCauseFunc) (*driver, error) {
	d := &driver{
		name:         conf.driverName,
		pool:         conf.nodeName,
		resourceName: conf.resourceName,
		devices:      devices,
		client:       client,
		statePath:    statePath,
		cancel:       cancel,
		prepared:     map[types.UID][]string{},
	}
	if err := d.load(); err != nil {
		return nil, err
	}
	return d, nil
}

// resources is the one pool (named after the node) with one device per interface.
func (d *driver) resources() resourceslice.DriverResources {
	names := make([]string, 0, len(d.devices))
	for name := range d.devices {
		names = append(names, name)
	}
	sort.Strings(names)
	devices := make([]resourceapi.Device, 0, len(names))
	for _, name := range names {
		resourceName, deviceID := d.resourceName, name
		devices = append(devices, resourceapi.Device{
			Name: name,
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				attrResourceName: {StringValue: &resourceName},
				attrDeviceID:     {StringValue: &deviceID},
			},
		})
	}
	return resourceslice.DriverResources{
		Pools: map[string]resourceslice.Pool{d.pool: {Slices: []resourceslice.Slice{{Devices: devices}}}},
	}
}

func (d *driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	result := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, claim := range claims {
		result[claim.UID] = d.prepare(ctx, claim)
	}
	if err := d.save(); err != nil {
		return nil, err
	}
	return result, nil
}

func (d *driver) prepare(ctx context.Context, claim *resourceapi.ResourceClaim) kubeletplugin.PrepareResult {
	logger := klog.FromContext(ctx)
	if claim.Status.Allocation == nil {
		return kubeletplugin.PrepareResult{Err: fmt.Errorf("claim %s/%s is not allocated", claim.Namespace, claim.Name)}
	}
	var devices []kubeletplugin.Device
	var names []string
	for _, allocated := range claim.Status.Allocation.Devices.Results {
		if allocated.Driver != d.name {
			continue
		}
		if _, ok := d.devices[allocated.Device]; !ok || allocated.Pool != d.pool {
			return kubeletplugin.PrepareResult{Err: fmt.Errorf("claim %s/%s: device %s/%s is not one of this node's",
				claim.Namespace, claim.Name, allocated.Pool, allocated.Device)}
		}
		if holder := d.holder(allocated.Device); holder != "" && holder != claim.UID {
			return kubeletplugin.PrepareResult{Err: fmt.Errorf("claim %s/%s: device %s is prepared for claim %s",
				claim.Namespace, claim.Name, allocated.Device, holder)}
		}
		devices = append(devices, kubeletplugin.Device{
			Requests: []string{allocated.Request}, PoolName: allocated.Pool, DeviceName: allocated.Device,
		})
		names = append(names, allocated.Device)
	}
	if err := d.publishNetworkData(ctx, claim, names); err != nil {
		return kubeletplugin.PrepareResult{Err: err}
	}
	d.prepared[claim.UID] = names
	logger.Info("prepared", "claim", claim.Namespace+"/"+claim.Name, "uid", claim.UID, "devices", names)
	return kubeletplugin.PrepareResult{Devices: devices}
}

// holder is the claim holding `device`, "" when none does.
func (d *driver) holder(device string) types.UID {
	for uid, names := range d.prepared {
		for _, name := range names {
			if name == device {
				return uid
			}
		}
	}
	return ""
}

// publishNetworkData writes status.devices[] of the claim for its devices of this driver.
func (d *driver) publishNetworkData(ctx context.Context, claim *resourceapi.ResourceClaim, names []string) error {
	if len(names) == 0 {
		return nil
	}
	claims := d.client.ResourceV1().ResourceClaims(claim.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := claims.Get(ctx, claim.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if current.UID != claim.UID {
			return fmt.Errorf("claim %s/%s was replaced", claim.Namespace, claim.Name)
		}
		kept := current.Status.Devices[:0]
		for _, status := range current.Status.Devices {
			if status.Driver != d.name {
				kept = append(kept, status)
			}
		}
		for _, name := range names {
			kept = append(kept, resourceapi.AllocatedDeviceStatus{
				Driver: d.name, Pool: d.pool, Device: name,
				NetworkData: &resourceapi.NetworkDeviceData{InterfaceName: name, HardwareAddress: d.devices[name]},
			})
		}
		current.Status.Devices = kept
		_, err = claims.UpdateStatus(ctx, current, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("claim %s/%s: publishing its devices' network data: %w", claim.Namespace, claim.Name, err)
	}
	return nil
}

func (d *driver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	result := make(map[types.UID]error, len(claims))
	for _, claim := range claims {
		klog.FromContext(ctx).Info("unprepared", "claim", claim.Namespace+"/"+claim.Name, "uid", claim.UID,
			"devices", d.prepared[claim.UID])
		delete(d.prepared, claim.UID)
		result[claim.UID] = nil
	}
	if err := d.save(); err != nil {
		return nil, err
	}
	return result, nil
}

// HandleError logs background errors; one that is not recoverable stops the driver.
func (d *driver) HandleError(ctx context.Context, err error, msg string) {
	klog.FromContext(ctx).Error(err, msg)
	if !errors.Is(err, kubeletplugin.ErrRecoverable) {
		d.cancel(fmt.Errorf("%s: %w", msg, err))
	}
}

// load reads the claims prepared by an earlier run of the driver (kubelet may unprepare them
// through this one).
func (d *driver) load() error {
	file, err := os.Open(d.statePath)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, maxStateBytes+1))
	if err != nil {
		return err
	}
	if len(data) > maxStateBytes {
		return fmt.Errorf("%s: larger than %d bytes", d.statePath, maxStateBytes)
	}
	if err := json.Unmarshal(data, &d.prepared); err != nil {
		return fmt.Errorf("%s: %w", d.statePath, err)
	}
	if d.prepared == nil { // the file held null
		d.prepared = map[types.UID][]string{}
	}
	return nil
}

// save replaces the state file (written aside, then renamed over it).
func (d *driver) save() error {
	data, err := json.Marshal(d.prepared)
	if err != nil {
		return err
	}
	staging := d.statePath + ".new"
	if err := os.WriteFile(staging, data, 0o600); err != nil {
		return err
	}
	return os.Rename(staging, d.statePath)
}
