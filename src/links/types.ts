/**
 * The shapes of a mobile deep link (docs/platform.md#deep-links).
 * @module
 */

/** Screen parameters: every value is a string, as the app reads them. */
export type PageParams = Readonly<Record<string, string>>;

/** A screen of the app: its route pattern and the values of its parameters. */
export interface DeepLinkPage {
  /** The screen's route pattern, e.g. `/course/:courseId([0-9_A-Za-z]+)`. */
  readonly pageId: string;
  readonly params: PageParams;
}

/** The `open-page` action of `extra`: navigate to a screen. */
export interface OpenPageAction extends DeepLinkPage {
  readonly type: 'open-page';
}

/** The `login-by-token` action of `extra`: sign the user in with a session token. */
export interface LoginByTokenAction {
  readonly type: 'login-by-token';
  /** A session token. Secret. */
  readonly token: string;
}

/** An action of `extra`, as carried on the wire. */
export type DeepLinkAction = LoginByTokenAction | OpenPageAction;

/** Options of `buildDeepLink`. */
export interface DeepLinkOptions {
  /** The school's domain (FQDN), e.g. `school.example.com`: no scheme, port or path. */
  domain: string;
  /** The screen to open: `lessonPage(…)`, `coursePage(…)` or a raw `{ pageId, params }`. */
  page: DeepLinkPage;
  /** A session token: adds `login-by-token` as the first action, so the app signs in first. */
  loginToken?: string;
  /** Further screens to open, run after the sign-in and before `page`. */
  actions?: readonly OpenPageAction[];
  /** The app's URL scheme. Default `serviceapp`. */
  scheme?: string;
}

/** A deep link taken apart by `parseDeepLink`: the canonical options that build it again. */
export interface DeepLink extends DeepLinkOptions {
  /** The URL scheme, in lower case. */
  scheme: string;
}
