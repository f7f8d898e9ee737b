// Reads resource files only when they are regular files. A FIFO, socket or device is refused without a blocking
// read: it is opened non-blocking and checked on the open descriptor, so a swap after a stat cannot hang us.
import { closeSync, constants, fstatSync, openSync, readFileSync, type Stats } from 'node:fs';
import { open } from 'node:fs/promises';
import { PorticoError } from './errors.js';

const FLAGS = constants.O_RDONLY | constants.O_NONBLOCK;

/** `a FIFO`, `a directory`…: what a path is when it is not a regular file. */
export function fileKind(info: Stats): string {
  if (info.isFile()) return 'a regular file';
  if (info.isDirectory()) return 'a directory';
  if (info.isFIFO()) return 'a FIFO';
  if (info.isSocket()) return 'a socket';
  if (info.isCharacterDevice() || info.isBlockDevice()) return 'a device';
  return 'not a regular file';
}

/** `what` without the path: `a FIFO, not a regular file: not read`, for errors that name the file apart. */
export class NotRegularFileError extends PorticoError {
  constructor(
    readonly path: string,
    readonly what: string,
  ) {
    super('E_IO', `${path}: ${what}`);
  }
}

export function notRegularFile(path: string, info: Stats): NotRegularFileError {
  return new NotRegularFileError(path, `${fileKind(info)}, not a regular file: not read`);
}

export function readRegularFileSync(path: string): string {
  const fd = openSync(path, FLAGS);
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) throw notRegularFile(path, info);
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}

export async function readRegularFile(path: string): Promise<string> {
  const handle = await open(path, FLAGS);
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw notRegularFile(path, info);
    return await handle.readFile('utf8');
  } finally {
    await handle.close();
  }
}
