// The CLI's yardstick: a bare commander program that prints its version.
import { Command } from 'commander';

new Command('bare').version('0.1.0').parse();
