/**
 * Console user passwords use the service's scrypt format (`scrypt$N$r$p$salt$hash`): one
 * implementation, shared, so the parameters are raised in one place.
 */
export { hashPassword, verifyPassword } from '../../server/src/users/passwords.ts';
