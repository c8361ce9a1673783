// The test-facing names of src/host/kernel/simulator.ts, which replay also runs.
export {
  createSimulatedKernel as createFakeKernel,
  type SimulatedKernel as FakeKernel,
  type SimulatedKernelOptions as FakeKernelOptions,
} from "../simulator.ts";
