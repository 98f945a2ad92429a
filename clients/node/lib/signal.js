// A wake-up flag a loop clears before it reads and waits on after: a
// notification that arrives while it reads is never lost.
export class Signal {
  constructor() {
    this.fired = false;
    this.waiters = [];
  }

  fire() {
    this.fired = true;
    const w = this.waiters;
    this.waiters = [];
    for (const r of w) r();
  }

  clear() {
    this.fired = false;
  }

  wait() {
    if (this.fired) return Promise.resolve();
    return new Promise((r) => this.waiters.push(r));
  }
}

// Resolves with p, or rejects with onTimeout() once deadline (ms since the
// epoch; Infinity: never) passes.
export function beforeDeadline(p, deadline, onTimeout) {
  if (deadline === Infinity) return p;
  const left = deadline - Date.now();
  if (left <= 0) return Promise.reject(onTimeout());
  let timer;
  const t = new Promise((_, reject) => { timer = setTimeout(() => reject(onTimeout()), left); });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}
