import os from 'node:os';

export interface MachineInfo {
  cpuModel: string;
  cores: number;
  totalMemoryBytes: number;
  node: string;
  kernel: string;
  platform: string;
  arch: string;
  hostname: string;
}

export function describeMachine(): MachineInfo {
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    totalMemoryBytes: os.totalmem(),
    node: process.version,
    kernel: `${os.type()} ${os.release()}`,
    platform: os.platform(),
    arch: os.arch(),
    hostname: os.hostname(),
  };
}

export function formatMachine(machine: MachineInfo): string {
  const gib = (machine.totalMemoryBytes / 1024 ** 3).toFixed(1);
  return `${machine.cpuModel} × ${machine.cores} vCPU, ${gib} GiB, Node ${machine.node}, ${machine.kernel}`;
}
