/** Placeholder until its issue lands: answers "not implemented yet" with exit code 2. */
export function hookCommand(_args: string[]): Promise<number> {
  console.error("openviking-kimi: not implemented yet");
  return Promise.resolve(2);
}
