/** ASP.NET Identity's password options, as Auth:PasswordPolicy sets them. */
export interface PasswordPolicy {
  MinLength: number;
  RequireDigit: boolean;
  RequireUppercase: boolean;
  RequireLowercase: boolean;
  RequireNonAlphanumeric: boolean;
}

/** Each rule the password breaks, worded for the caller (the password itself is never echoed). */
export function passwordPolicyViolations(password: string, policy: PasswordPolicy): string[] {
  const violations: string[] = [];
  if ([...password].length < policy.MinLength) violations.push(`must be at least ${policy.MinLength} characters`);
  if (policy.RequireDigit && !/\p{Nd}/u.test(password)) violations.push('must contain a digit');
  if (policy.RequireUppercase && !/\p{Lu}/u.test(password)) violations.push('must contain an upper-case letter');
  if (policy.RequireLowercase && !/\p{Ll}/u.test(password)) violations.push('must contain a lower-case letter');
  if (policy.RequireNonAlphanumeric && !/[^\p{L}\p{N}]/u.test(password))
    violations.push('must contain a character that is neither a letter nor a digit');
  return violations;
}
