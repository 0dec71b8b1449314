/**
 * The NestJS adapter: a module that answers webhook deliveries on its route, and a decorator that
 * makes any provider's method a handler. Works on both Nest platforms (Express and Fastify).
 * @module schoolhooks/nestjs
 */

import {
  All,
  Controller,
  Inject,
  Injectable,
  Logger,
  Module,
  Req,
  Res,
  SetMetadata,
  type DynamicModule,
  type InjectionToken,
  type ModuleMetadata,
  type OnModuleInit,
  type OptionalFactoryDependency,
  type Type,
} from '@nestjs/common';
import {
  DiscoveryModule,
  DiscoveryService,
  HttpAdapterHost,
  MetadataScanner,
  Reflector,
} from '@nestjs/core';
import { defineAdapter } from './adapter-kit.js';
import { nodeBodyReader, type NodeBodyStream, type HeadersInput } from '../receiving/request.js';
import { ConfigError } from '../errors.js';
import type { KnownEventName } from '../platform/events/index.js';
import {
  createReceiver,
  type EventHandler,
  type Receiver,
  type ReceiverOptions,
  type WebhookRequest,
} from '../receiving/receiver.js';

/**
 * The receiver, injectable by this class: `constructor(private receiver: SchoolhooksReceiver)`
 * (with `emitDecoratorMetadata`), or `@Inject(SchoolhooksReceiver) receiver: SchoolhooksReceiver`.
 * Never instantiated: the module provides the receiver under this token.
 */
// A class, so Nest injects it by type; merged with an interface, so its type is the receiver's.
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export abstract class SchoolhooksReceiver {}
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging, @typescript-eslint/no-empty-object-type
export interface SchoolhooksReceiver extends Receiver {}

/**
 * Options of {@link SchoolhooksModule.forRoot}: the route's path, and any `createReceiver` option
 * (or a receiver made elsewhere, e.g. one an inbox worker shares).
 */
export type SchoolhooksModuleOptions = (ReceiverOptions | { receiver: Receiver }) &
  SchoolhooksRouteOptions;

/** What the module's route reads of a request to name its tenant: its parameters, on Express and Fastify. */
export interface SchoolhooksRouteRequest {
  /** The route's parameters: `params.tenant` on a path `/webhooks/school/:tenant`. */
  readonly params?: Readonly<Record<string, string | undefined>> | undefined;
  /** The request's URL, path and query. */
  readonly url?: string | undefined;
}

/** The module's route: its path, and the tenant it names. */
export interface SchoolhooksRouteOptions {
  /** The route's path, e.g. `/webhooks/school` (after the app's global prefix, if any). */
  path: string;
  /**
   * The tenant the route names, when one endpoint serves many schools (docs/tenants.md); required
   * when the receiver's `secret` is a lookup.
   *
   * @example
   * ```ts
   * SchoolhooksModule.forRoot({ secret: lookup, path: '/webhooks/school/:tenant', tenant: (req) => req.params?.tenant });
   * ```
   */
  tenant?: ((request: SchoolhooksRouteRequest) => string | undefined) | undefined;
}

/** Options of {@link SchoolhooksModule.forRootAsync}: the receiver's options come from a factory. */
export interface SchoolhooksModuleAsyncOptions extends SchoolhooksRouteOptions {
  /** The route's path: Nest's routes are fixed when the module is defined, before any factory runs. */
  path: string;
  /** Modules that export what the factory injects (e.g. `ConfigModule`). */
  imports?: ModuleMetadata['imports'];
  /** The `createReceiver` options, from the providers listed in `inject`, in that order. */
  useFactory: (...args: never[]) => ReceiverOptions | Promise<ReceiverOptions>;
  inject?: (InjectionToken | OptionalFactoryDependency)[];
}

const SCHOOL_EVENTS = 'schoolhooks:events';

/**
 * Make a provider's method the handler of one event or several; it runs with `this` = the
 * provider. Found when the module initialises, on every provider and controller of the app.
 *
 * @example
 * ```ts
 * @Injectable()
 * export class Payments {
 *   @OnSchoolEvent('PaymentCompleted')
 *   async grant(event: WebhookEvent<'PaymentCompleted'>) {
 *     await this.access.grant(event.data.payment.invoice.user.id);
 *   }
 * }
 * ```
 */
export function OnSchoolEvent<N extends KnownEventName>(
  name: N | readonly N[],
): <H extends EventHandler<N>>(
  target: object,
  key: string | symbol,
  descriptor: TypedPropertyDescriptor<H>,
) => void {
  return SetMetadata(SCHOOL_EVENTS, typeof name === 'string' ? [name] : [...name]);
}

/** What the route reads of a request: Express's (a Node stream) or Fastify's (`raw` is one). */
interface NestRequest extends SchoolhooksRouteRequest {
  method: string;
  headers: HeadersInput;
  /** The raw bytes, kept by Nest when the app is created with `rawBody: true`. */
  rawBody?: unknown;
  raw?: NodeBodyStream;
}

const RAW_BODY_FIX =
  'create the app with NestFactory.create(AppModule, { rawBody: true }) so Nest keeps the bytes ' +
  'the platform signed';

function controllerFor({ path, tenant }: SchoolhooksRouteOptions): Type<unknown> {
  @Controller()
  class SchoolhooksController {
    readonly #logger = new Logger('SchoolhooksModule');
    readonly #answer: (req: NestRequest, res: unknown) => Promise<void>;

    constructor(
      @Inject(SchoolhooksReceiver) receiver: Receiver,
      @Inject(HttpAdapterHost) host: HttpAdapterHost,
    ) {
      this.#answer = defineAdapter<[NestRequest, unknown], void>({
        rawBodyFix: RAW_BODY_FIX,
        method: (req) => req.method,
        headers: (req) => req.headers,
        body: rawBodyOf,
        write: ({ status, outcome, body }, headers, req, res) => {
          if (outcome === 'body_unavailable' && req.rawBody === undefined) {
            this.#logger.error(`the raw request body is not available: ${RAW_BODY_FIX}`);
          }
          // Express's or Fastify's own response, whichever platform the app runs on.
          const { httpAdapter } = host;
          for (const name in headers) httpAdapter.setHeader(res, name, headers[name]!);
          httpAdapter.reply(res, body, status);
        },
      })(receiver, { tenant });
    }

    @All(path)
    handle(@Req() req: NestRequest, @Res() res: unknown): Promise<void> {
      return this.#answer(req, res);
    }
  }
  return SchoolhooksController;
}

function rawBodyOf(req: NestRequest): WebhookRequest['body'] {
  if (req.rawBody instanceof Uint8Array) return req.rawBody;
  // Without rawBody: true, Nest's parser read a JSON body and the reader says so (body_unavailable);
  // a body it does not parse (another content type) is still there, for the 415.
  return nodeBodyReader(req.raw ?? (req as unknown as NodeBodyStream));
}

/** Registers every `@OnSchoolEvent` method of the app's providers and controllers, once. */
@Injectable()
class SchoolhooksExplorer implements OnModuleInit {
  constructor(
    @Inject(DiscoveryService) private readonly discovery: DiscoveryService,
    @Inject(MetadataScanner) private readonly scanner: MetadataScanner,
    @Inject(Reflector) private readonly reflector: Reflector,
    @Inject(SchoolhooksReceiver) private readonly receiver: Receiver,
  ) {}

  onModuleInit(): void {
    for (const wrapper of [...this.discovery.getProviders(), ...this.discovery.getControllers()]) {
      const instance: unknown = wrapper.instance;
      // An instance's (an object, or null), or its metatype's: a class's, a function factory's, or
      // undefined for an arrow or async factory, whose instance is what it returned.
      // (Not cast as a whole: Stryker plants no mutant inside an `as` expression.)
      const prototype: unknown =
        typeof instance === 'object' && instance !== null
          ? Object.getPrototypeOf(instance)
          : wrapper.metatype?.prototype;
      // The scanner lists nothing of a null or undefined prototype, and only methods: names whose
      // value is a function (no getters, no constructor), so neither needs a check here.
      for (const method of this.scanner.getAllMethodNames(prototype as object | null)) {
        const handler = (prototype as Record<string, EventHandler>)[method]!;
        const names = this.reflector.get<KnownEventName[] | undefined>(SCHOOL_EVENTS, handler);
        if (!names) continue;
        if (!wrapper.isDependencyTreeStatic()) {
          throw new ConfigError(
            `@OnSchoolEvent on ${wrapper.name}.${method}: the provider is request- or ` +
              'transient-scoped, so no single instance can handle deliveries; make it a singleton',
          );
        }
        const missing = undeclaredDependency(wrapper, this.reflector);
        if (missing !== undefined) {
          throw new ConfigError(
            `@OnSchoolEvent on ${wrapper.name}.${method}: the constructor's parameter #${missing + 1} ` +
              'has no type Nest can see (no design:paramtypes metadata: tsx and esbuild emit none), so ' +
              'it was left undefined and the handler would fail or do nothing on a delivery; name it ' +
              'with @Inject(Token), or build with a compiler that emits decorator metadata (tsc or ' +
              'SWC with emitDecoratorMetadata)',
          );
        }
        if (typeof instance !== 'object' || !instance) {
          // A factory whose prototype carries the handler, but which made no object of it.
          throw new ConfigError(
            `@OnSchoolEvent on ${wrapper.name}.${method}: the provider's value is not an object, ` +
              'so the handler has no instance to run on; provide an instance of the class',
          );
        }
        this.receiver.on(names, handler.bind(instance));
      }
    }
  }
}

/** A provider or controller as Nest's discovery lists it. */
type InstanceWrapper = ReturnType<DiscoveryService['getProviders']>[number];

/**
 * The index of the first constructor parameter of a class provider that Nest had no token for, or
 * undefined. Nest takes a parameter's token from `design:paramtypes` (the types a compiler with
 * emitDecoratorMetadata records) or from `@Inject` (`self:paramtypes`); with neither, it passes
 * undefined without an error (Nest 12 logs a warning, Nest 11 nothing). A parameter marked
 * `@Optional()` may be undefined by design.
 */
function undeclaredDependency(wrapper: InstanceWrapper, reflector: Reflector): number | undefined {
  const type = wrapper.metatype;
  // A factory's parameters are its `inject` list; a value has no constructor Nest called.
  if (wrapper.isFactory || typeof type !== 'function' || type.length === 0) return undefined;
  if (reflector.get<unknown[] | undefined>('design:paramtypes', type) !== undefined)
    return undefined;
  const named = reflector.get<{ index: number }[] | undefined>('self:paramtypes', type) ?? [];
  const optional = reflector.get<number[] | undefined>('optional:paramtypes', type) ?? [];
  for (let index = 0; index < type.length; index++) {
    if (!named.some((token) => token.index === index) && !optional.includes(index)) return index;
  }
  return undefined;
}

/**
 * Answer webhook deliveries in a Nest app, on Express or Fastify. Create the app with
 * `rawBody: true`: Nest then keeps the bytes the signature covers; without it a delivery is
 * answered 500 `body_unavailable` and the log says how to fix it. The module is global: any
 * provider can inject {@link SchoolhooksReceiver}.
 *
 * @example
 * ```ts
 * @Module({
 *   imports: [SchoolhooksModule.forRoot({ secret: process.env.SCHOOL_WEBHOOK_SECRET!, path: '/webhooks/school' })],
 *   providers: [Payments],
 * })
 * class AppModule {}
 *
 * const app = await NestFactory.create(AppModule, { rawBody: true });
 * await app.listen(3000);
 * ```
 */
@Module({})
export class SchoolhooksModule {
  /** The module answering on `path`, with a receiver made of `options` (or the one given). */
  static forRoot(options: SchoolhooksModuleOptions): DynamicModule {
    return moduleOf(options, () => {
      if ('receiver' in options) return options.receiver;
      const { path: _path, tenant: _tenant, ...receiverOptions } = options;
      return createReceiver(receiverOptions);
    });
  }

  /**
   * The module with a receiver made of what `useFactory` returns, from injected providers.
   *
   * @example
   * ```ts
   * SchoolhooksModule.forRootAsync({
   *   path: '/webhooks/school',
   *   imports: [ConfigModule],
   *   inject: [ConfigService],
   *   useFactory: (config: ConfigService) => ({ secret: config.getOrThrow('SCHOOL_WEBHOOK_SECRET') }),
   * });
   * ```
   */
  static forRootAsync(options: SchoolhooksModuleAsyncOptions): DynamicModule {
    const { useFactory, inject, imports, ...route } = options;
    const receiverOf = async (...args: never[]) => createReceiver(await useFactory(...args));
    return moduleOf(route, receiverOf, inject, imports);
  }
}

/** The module on `route`, its receiver made by `receiverOf` of the providers in `inject`. */
function moduleOf(
  route: SchoolhooksRouteOptions,
  receiverOf: (...args: never[]) => Receiver | Promise<Receiver>,
  inject: SchoolhooksModuleAsyncOptions['inject'] = [],
  imports: SchoolhooksModuleAsyncOptions['imports'] = [],
): DynamicModule {
  const receiver = { provide: SchoolhooksReceiver, useFactory: receiverOf, inject };
  return {
    module: SchoolhooksModule,
    global: true,
    imports: [DiscoveryModule, ...imports],
    controllers: [controllerFor(route)],
    providers: [receiver, SchoolhooksExplorer],
    exports: [SchoolhooksReceiver],
  };
}
