// Request deadlines without a timer per request: requests with the same timeout length expire in the order
// they were scheduled, so each length keeps a linked list in deadline order and one timer for its head.
// Cancelling unlinks in O(1); the timer is re-armed only when it fires.
import { performance } from 'node:perf_hooks';

/** What a deadline ends. */
export interface Expiring {
  timeout(): void;
}

/** A scheduled deadline: its owner's `timeout` runs once it passes, unless cancelled first. */
export class Deadline {
  at = 0;
  prev: Deadline | undefined = undefined;
  next: Deadline | undefined = undefined;
  queue: DeadlineQueue | undefined = undefined;
  constructor(readonly owner: Expiring) {}
}

class DeadlineQueue {
  private head: Deadline | undefined = undefined;
  private tail: Deadline | undefined = undefined;
  private timer: NodeJS.Timeout | undefined = undefined;

  constructor(private readonly ms: number) {}

  add(deadline: Deadline, now: number): void {
    deadline.at = now + this.ms;
    deadline.queue = this;
    deadline.prev = this.tail;
    deadline.next = undefined;
    if (this.tail === undefined) this.head = deadline;
    else this.tail.next = deadline;
    this.tail = deadline;
    if (this.timer === undefined) this.arm(this.ms);
  }

  remove(deadline: Deadline): void {
    const { prev, next } = deadline;
    if (prev === undefined) this.head = next;
    else prev.next = next;
    if (next === undefined) this.tail = prev;
    else next.prev = prev;
    deadline.prev = undefined;
    deadline.next = undefined;
    deadline.queue = undefined;
  }

  private arm(ms: number): void {
    this.timer = setTimeout(fire, Math.max(1, Math.ceil(ms)), this);
    // Pending deadlines alone do not keep the process alive (their requests' sockets do).
    this.timer.unref();
  }

  fire(): void {
    this.timer = undefined;
    const now = performance.now();
    let head = this.head;
    while (head !== undefined && head.at <= now) {
      this.remove(head);
      head.owner.timeout();
      head = this.head;
    }
    if (head !== undefined && this.timer === undefined) this.arm(head.at - now);
  }
}

function fire(queue: DeadlineQueue): void {
  queue.fire();
}

const queues = new Map<number, DeadlineQueue>();

/** Schedules `deadline` `ms` after `now` (a performance.now() reading), replacing any earlier schedule. */
export function schedule(deadline: Deadline, ms: number, now: number): void {
  deadline.queue?.remove(deadline);
  let queue = queues.get(ms);
  if (queue === undefined) {
    queue = new DeadlineQueue(ms);
    queues.set(ms, queue);
  }
  queue.add(deadline, now);
}

export function cancel(deadline: Deadline): void {
  deadline.queue?.remove(deadline);
}
