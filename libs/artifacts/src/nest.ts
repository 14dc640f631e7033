export { artifactStoreProbe, ArtifactsModule } from './artifacts.module';
