// Command braid-test-dra-driver is the node tier's test DRA driver: a kubelet plugin, built on
// the kubeletplugin helper of k8s.io/dynamic-resource-allocation, that offers the host network
// interfaces named on its command line as devices of one ResourceSlice for its node.
//
// Each device is named after its interface and carries the attributes a CNI meta-plugin reads
// (k8s.cni.cncf.io/resourceName and k8s.cni.cncf.io/deviceID). Preparing a claim moves nothing
// (the CNI delegate does that) and names no CDI device; it records which claim holds which
// device, refuses a device already held by another claim, and publishes each device's
// networkData (host interface name, MAC address) in the claim's status.
//
// Test-only: nothing here is shipped. hack/node/dra-driver.sh builds it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"
)

// At most this many interfaces: one ResourceSlice holds at most 128 devices.
const maxDevices = 128

type config struct {
	driverName   string
	resourceName string
	nodeName     string
	kubeconfig   string
	kubeletRoot  string
	interfaces   []string
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "braid-test-dra-driver: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	conf, err := parseFlags()
	if err != nil {
		return err
	}
	devices, err := lookupDevices(conf.interfaces)
	if err != nil {
		return err
	}
	restConfig, err := clientcmd.BuildConfigFromFlags("", conf.kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", conf.kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return fmt.Errorf("API client: %w", err)
	}
	dataDir := filepath.Join(conf.kubeletRoot, "plugins", conf.driverName)
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return err
	}

	signals, stopSignals := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stopSignals()
	ctx, cancel := context.WithCancelCause(signals)
	defer cancel(nil)

	d, err := newDriver(conf, devices, client, filepath.Join(dataDir, "prepared.json"), cancel)
	if err != nil {
		return err
	}
	helper, err := kubeletplugin.Start(ctx, d,
		kubeletplugin.DriverName(conf.driverName),
		kubeletplugin.NodeName(conf.nodeName),
		kubeletplugin.KubeClient(client),
		kubeletplugin.RegistrarDirectoryPath(filepath.Join(conf.kubeletRoot, "plugins_registry")),
		kubeletplugin.PluginDataDirectoryPath(dataDir),
		kubeletplugin.GRPCVerbosity(2),
	)
	if err != nil {
		return fmt.Errorf("start the kubelet plugin: %w", err)
	}
	defer helper.Stop()
	if err := helper.PublishResources(ctx, d.resources()); err != nil {
		return fmt.Errorf("publish the ResourceSlice: %w", err)
	}
	go reportRegistration(ctx, helper)
	<-ctx.Done()
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	klog.Info("stopping")
	return nil
}

func parseFlags() (config, error) {
	var conf config
	klog.InitFlags(nil)
	flag.StringVar(&conf.driverName, "driver-name", "dra.braid-test.example", "the DRA driver's name")
	flag.StringVar(&conf.resourceName, "resource-name", "braid-test.example/dranet",
		"the k8s.cni.cncf.io/resourceName attribute of every device")
	flag.StringVar(&conf.nodeName, "node-name", "", "the node this driver runs on (required)")
	flag.StringVar(&conf.kubeconfig, "kubeconfig", "", "the driver's kubeconfig (required)")
	flag.StringVar(&conf.kubeletRoot, "kubelet-root-dir", "/var/lib/kubelet", "kubelet's --root-dir")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(),
			"usage: %s --node-name NODE --kubeconfig FILE [flags] INTERFACE...\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	conf.interfaces = flag.Args()
	switch {
	case conf.nodeName == "" || conf.kubeconfig == "":
		return conf, errors.New("--node-name and --kubeconfig are required")
	case len(conf.interfaces) == 0 || len(conf.interfaces) > maxDevices:
		return conf, fmt.Errorf("name between 1 and %d interfaces", maxDevices)
	case len(validation.IsDNS1123Subdomain(conf.driverName)) > 0:
		return conf, fmt.Errorf("--driver-name %q is not a DNS subdomain", conf.driverName)
	case conf.resourceName == "" || len(conf.resourceName) > 64:
		return conf, errors.New("--resource-name must be 1 to 64 characters (a string attribute)")
	}
	return conf, nil
}

// lookupDevices maps each device name (the interface's name) to the interface's MAC address.
// An interface name must be usable as a device name: a DNS label.
func lookupDevices(names []string) (map[string]string, error) {
	devices := make(map[string]string, len(names))
	for _, name := range names {
		if problems := validation.IsDNS1123Label(name); len(problems) > 0 {
			return nil, fmt.Errorf("interface %q cannot be a device name: %v", name, problems)
		}
		if _, seen := devices[name]; seen {
			return nil, fmt.Errorf("interface %q named twice", name)
		}
		link, err := net.InterfaceByName(name)
		if err != nil {
			return nil, fmt.Errorf("interface %q: %w", name, err)
		}
		devices[name] = link.HardwareAddr.String()
	}
	return devices, nil
}

// reportRegistration logs once kubelet has accepted the registration (the tests wait for it).
func reportRegistration(ctx context.Context, helper *kubeletplugin.Helper) {
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		status := helper.RegistrationStatus()
		if status == nil {
			continue
		}
		if status.PluginRegistered {
			klog.Info("registered with kubelet")
		} else {
			klog.Errorf("kubelet refused the registration: %s", status.Error)
		}
		return
	}
}
